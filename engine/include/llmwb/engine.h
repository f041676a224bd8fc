// llmwb/engine.h — the iteration-level engine (vLLM's LLMEngine): add requests, call step()
// until nothing is left; each step runs one scheduled batch through the model.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llmwb/engine_config.h"
#include "llmwb/model_info.h"
#include "llmwb/outputs.h"
#include "llmwb/sampling_params.h"
#include "llmwb/step_inspection.h"
#include "llmwb/telemetry.h"

namespace llmwb {

// Load progress: fraction 0..1 and a short description. Return false to cancel loading
// (the Engine constructor then throws llmwb::Error("cancelled")).
using LoadProgress = std::function<bool(double fraction, const std::string& what)>;

struct AttentionCaptureRequest {
  int layer = 0;            // which layer's weights to capture
  int max_queries = 32;     // keep the last N query tokens
};

class Engine {
 public:
  explicit Engine(const EngineConfig& config, const LoadProgress& progress = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Tokenizes `prompt` (BOS added; an empty prompt is BOS alone) and queues it. With
  // `parse_special`, control pieces written in the text ("</s>", "<|im_start|>") become their
  // tokens, as chat templates need; otherwise they stay text.
  // Throws llmwb::Error when the request can never run (too long for the context or the KV pool,
  // bad sampling parameters). Returns the request id.
  uint64_t add_request(const std::string& prompt, const SamplingParams& params, bool parse_special = false);
  uint64_t add_request_tokens(const std::vector<int>& prompt_ids, const SamplingParams& params,
                              const std::string& prompt_text = {});
  // Aborts a request at any time; its KV blocks return to the pool at once.
  void abort(uint64_t request_id);
  bool has_unfinished() const;

  // One iteration: schedule, run the model over the batch, sample. Returns the requests that
  // changed in this step (new tokens, finished, aborted), with cumulative text and the delta.
  std::vector<RequestOutput> step();

  const StepTelemetry& telemetry() const;
  const ModelInfo& model_info() const;
  const EngineConfig& config() const;

  // Tokenizer access for callers (chat templates, token chips, heatmap axes). add_bos puts the
  // vocabulary's BOS first where it adds one (not Qwen's, which has none).
  std::vector<int> encode(const std::string& text, bool add_bos, bool parse_special = false) const;
  std::string decode(const std::vector<int>& ids) const;
  std::string token_text(int id) const;  // the piece as text ("▁the" -> " the", <0x0A> -> "\n")
  int bos_id() const;
  int eos_id() const;

  // Pausing (the token inspector): a paused request is not scheduled, keeps its KV blocks and
  // stays unfinished; the others run on. step_request lets it generate one more token, then
  // pauses it again. Unknown or finished ids are ignored.
  void pause(uint64_t request_id);
  void resume(uint64_t request_id);
  void step_request(uint64_t request_id);
  bool is_paused(uint64_t request_id) const;
  // Whether a step would do anything: an unfinished request that is not paused.
  bool has_runnable() const;

  // One generated token's step seen from inside (llmwb/step_inspection.h): the sampler's stages,
  // the logit lens, the token's attention in every layer and head, the time per op. Costs one
  // forward pass of the step (plus the context's prefill where the prefix cache lacks it).
  // Call between steps. Throws llmwb::Error for a bad context or when the KV pool has no room.
  StepInspection inspect_step(const InspectStepRequest& request);

  // Attention capture for the heatmap: on while set, off (and free) when nullopt.
  void set_attention_capture(std::optional<AttentionCaptureRequest> req);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmwb
