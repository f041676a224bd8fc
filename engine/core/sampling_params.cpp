#include "llmwb/sampling_params.h"

#include <cmath>

#include "llmwb/errors.h"
#include "llmwb/outputs.h"

namespace llmwb {

void SamplingParams::validate() const {
  auto bad = [](const char* field, const std::string& why) { throw Error(std::string("SamplingParams.") + field, why); };
  if (!std::isfinite(temperature) || temperature < 0.f) bad("temperature", "must be >= 0, got " + std::to_string(temperature));
  if (!(top_p > 0.f && top_p <= 1.f)) bad("top_p", "must be in (0, 1], got " + std::to_string(top_p));
  if (!(min_p >= 0.f && min_p <= 1.f)) bad("min_p", "must be in [0, 1], got " + std::to_string(min_p));
  if (!(repetition_penalty > 0.f) || !std::isfinite(repetition_penalty))
    bad("repetition_penalty", "must be > 0, got " + std::to_string(repetition_penalty));
  if (!(presence_penalty >= -2.f && presence_penalty <= 2.f))
    bad("presence_penalty", "must be in [-2, 2], got " + std::to_string(presence_penalty));
  if (!(frequency_penalty >= -2.f && frequency_penalty <= 2.f))
    bad("frequency_penalty", "must be in [-2, 2], got " + std::to_string(frequency_penalty));
  if (logprobs < -1 || logprobs > 20) bad("logprobs", "must be in [-1, 20], got " + std::to_string(logprobs));
  if (max_tokens < 1) bad("max_tokens", "must be >= 1, got " + std::to_string(max_tokens));
  if (n < 1 || n > 64) bad("n", "must be in [1, 64], got " + std::to_string(n));
  for (const auto& s : stop)
    if (s.empty()) bad("stop", "stop strings must not be empty");
}

const char* to_string(FinishReason r) {
  switch (r) {
    case FinishReason::None: return "none";
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
    case FinishReason::Error: return "error";
  }
  return "?";
}

}  // namespace llmwb
