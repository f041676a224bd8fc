// telemetry_json.h — StepTelemetry as one line of JSON (llmwb-cli generate --trace FILE).
#pragma once

#include <string>

#include "llmwb/telemetry.h"

namespace llmwb {

// One JSON object, no newline. `with_blocks` adds the per-block state array.
std::string telemetry_to_json(const StepTelemetry& t, bool with_blocks = true);

}  // namespace llmwb
