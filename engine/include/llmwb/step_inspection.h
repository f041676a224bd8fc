// llmwb/step_inspection.h — one generated token's step, seen from inside: what the sampler did
// with the logits, what the model "thought" after every layer (the logit lens), where this
// token's attention went in every layer and head, and where the step's time went.
//
// Engine::inspect_step computes it on demand, for any context and any sampler state: the
// context's K/V come from the prefix cache or are computed, then the last token runs once more
// alone through the runner with its layers recorded. Nothing is recorded during ordinary steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llmwb/sampling_params.h"

namespace llmwb {

// Which step to inspect: the context the token was sampled after (prompt + the tokens generated
// before it) and the sampler's state then. The RNG of a sample is the one Engine::add_request
// seeds from CompletionOutput::seed; before generated token i it has made `draws_before` draws
// (one per token sampled at temperature > 0: generated index i).
struct InspectStepRequest {
  std::vector<int> context;
  SamplingParams params;
  uint64_t seed = 0;          // CompletionOutput::seed of the sample
  int draws_before = 0;       // uniforms the sample's RNG drew before this token
  int top_candidates = 20;    // candidates listed in the sampler's view
  int lens_top = 5;           // tokens listed per layer in the logit lens
};

// The sampler's stages, in the order it applies them (sample/sampler.h).
enum class SamplerStage { None, RepetitionPenalty, TopK, TopP, MinP };
const char* to_string(SamplerStage s);

struct SamplerCandidate {
  int token = 0;
  std::string piece;
  int rank = 0;                 // by the final logit, 0 = most likely
  float logit = 0.f;            // raw, from the model
  float logit_penalized = 0.f;  // after the repetition penalty
  double prob_raw = 0;          // softmax of the raw logits (temperature 1)
  double prob_temperature = 0;  // softmax of the penalized logits at the temperature
  double prob_final = 0;        // after top-k, top-p, min-p and renormalization (0: removed)
  SamplerStage removed_by = SamplerStage::None;
  bool penalized = false;       // the repetition penalty changed its logit
};

struct SamplerTrace {
  bool greedy = false;
  std::vector<std::string> stages;      // applied, in order ("repetition_penalty", "temperature", ...)
  std::vector<SamplerCandidate> candidates;   // the most likely `top_candidates`, by final logit
  int kept = 0;                 // candidates left after the filters
  int chosen = -1;
  int chosen_rank = -1;
  double chosen_prob = 0;       // under the final distribution (greedy: 1)
  double draw = -1;             // the uniform in [0, 1) the draw used (-1: greedy)
  double draw_cdf_before = 0;   // mass of the candidates before the chosen one, in draw order
};

struct LensToken {
  int token = 0;
  std::string piece;
  double prob = 0;
};

// The final norm and the output head applied to the residual stream after one layer.
struct LensLayer {
  int layer = 0;
  std::vector<LensToken> top;
  int chosen_rank = 0;          // rank of the finally chosen token here (0 = top)
  double chosen_prob = 0;
  double residual_norm = 0;     // L2 norm of the residual stream after the layer
  double attention_norm = 0;    // of what the layer's attention added to it
  double ffn_norm = 0;          // of what its feed-forward block added
  std::vector<float> logits;    // head(residual) over the vocabulary
};

struct OpTime {
  std::string op;               // "embed", "rmsnorm", "matmul", "rope", "attention", ...
  int layer = -1;               // -1: outside the layers (embedding, final norm and head)
  double seconds = 0;
  int calls = 0;
};

struct StepTiming {
  std::vector<OpTime> ops;      // per (layer, op)
  double forward_seconds = 0;   // the recorded pass, all ops
  double weight_bytes = 0;      // bytes of weights one decode step reads (flops.h)
  double kv_bytes = 0;          // K/V bytes its attention reads
  double flops = 0;             // its floating-point work (flops.h)
};

struct StepAttention {
  int n_layers = 0;
  int n_heads = 0;
  int position = 0;                              // the query's position; rows are position + 1 long
  std::vector<std::vector<float>> weights;       // [layer * n_heads + head]
  std::vector<int> blocks_read;                  // the physical KV blocks this row read
};

struct StepInspection {
  std::vector<int> context;     // the tokens before the sampled one
  int position = 0;             // position of the last context token (the query)
  std::string runner;           // which runner recorded it
  SamplerTrace sampler;
  std::vector<LensLayer> lens;  // one per layer
  StepAttention attention;
  StepTiming timing;
  std::vector<float> logits;    // the model's logits for the step (vocab_size)
};

}  // namespace llmwb
