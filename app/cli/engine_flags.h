// engine_flags.h — the engine and sampling flags shared by generate and bench.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "llmwb/engine_config.h"
#include "llmwb/sampling_params.h"

namespace llmwb {
class Engine;
}

namespace llmwb::cli {

// Flag names taking a value / boolean flags understood by engine_config_from().
const std::vector<std::string>& engine_value_flags();
const std::vector<std::string>& engine_bool_flags();
const char* engine_flags_usage();
// --model (default: LLMWB_MODEL, else the stories260K demo, see llmwb/default_model.h), --tokenizer, --threads, --backend, --block-size,
// --kv-memory, --max-num-seqs, --max-batched-tokens, --no-prefix-cache, --max-model-len, ...
EngineConfig engine_config_from(const Args& a);
// --spec's value: draft:PATH, ngram[:MIN:MAX], self-int4 or layers:K (UsageError otherwise).
SpeculativeConfig speculative_config_from(const std::string& value);
// draft_p_min as the JSON writers report it: "auto" or the threshold.
nlohmann::json draft_p_min_json(const SpeculativeConfig& s);
// On stderr: a warning when --max-model-len goes past the context the model was trained for
// (quality there is not promised, and the KV pool is sized for the longer context).
void warn_beyond_trained_context(const Engine& engine, const char* command);
std::string default_model_path();

const std::vector<std::string>& sampling_value_flags();
const char* sampling_flags_usage();
SamplingParams sampling_params_from(const Args& a);

// Concatenates flag lists.
std::vector<std::string> join(std::initializer_list<std::vector<std::string>> lists);

}  // namespace llmwb::cli
