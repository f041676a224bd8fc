// http_bench.h — `llmwb-cli serve-bench --url URL`: the serving benchmark over HTTP against a
// running `llmwb-cli serve` (or any OpenAI-compatible server): for each concurrency, that many
// streaming clients each send requests back to back; reports requests/s, output tokens/s and
// TTFT / inter-token latency percentiles, beside the in-process figures of plain serve-bench
// (the difference is the HTTP layer's cost).
#pragma once

#include "args.h"

namespace llmwb::cli {

int run_http_bench(const Args& a);

}  // namespace llmwb::cli
