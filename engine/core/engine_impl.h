// engine_impl.h — Engine's state, shared by the files that implement it: engine.cpp (the step
// loop and the public calls), engine_load.cpp (model, runner and KV pool at start-up),
// engine_telemetry.cpp (each step's telemetry and the attention capture).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/output_processor.h"
#include "core/request_state.h"
#include "kv/block_manager.h"
#include "llmwb/engine.h"
#include "format/model_file.h"
#include "runner/model_runner.h"
#include "sample/sampler.h"
#include "sched/scheduler.h"
#include "spec/proposer.h"
#include "spec/spec_cost.h"
#include "spec/verifier.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {

// Seconds each phase of one step took.
struct StepTimes {
  double schedule = 0, forward = 0, sample = 0, draft = 0;
};

struct Engine::Impl {
  EngineConfig cfg;
  Clock::time_point t_start = Clock::now();
  std::unique_ptr<ModelFile> file;
  std::unique_ptr<Tokenizer> tok;
  ModelInfo info;
  std::unique_ptr<ModelRunner> runner;
  RunnerCapabilities caps;   // what the runner said it can do, asked once at load
  std::unique_ptr<OutputProcessor> output;
  uint64_t kv_bytes = 0;
  std::unique_ptr<BlockManager> blocks;
  std::unique_ptr<Scheduler> sched;
  Sampler sampler;
  // Speculative decoding (null when off): the proposer, the verifier and their counts.
  std::unique_ptr<Proposer> proposer;
  SpeculativeVerifier verifier{sampler};
  SpeculativeStats spec_step, spec_total;
  SpecCost spec_cost;   // what a pass of the target and of the draft cost (adaptive draft lengths)
  int draft_passes = 0;  // of this step's propose(): the draft's passes (1 for a lookup), 0 without guesses
  double draft_seconds_total = 0, verify_seconds_total = 0;
  int max_model_len = 0;
  uint64_t next_request = 1, next_seq = 1, next_arrival = 1;
  std::map<uint64_t, std::unique_ptr<Request>> requests;
  std::map<uint64_t, std::pair<Request*, SeqState*>> by_seq;   // seq_id -> owner
  StepTelemetry telemetry;
  uint64_t step_count = 0;
  uint64_t prefix_hit_tokens = 0, prefix_queried_tokens = 0;
  int so_prefill_seqs = 0, so_decode_seqs = 0;   // of the step being run
  std::vector<float> logits;
  // Attention capture (heatmap).
  std::optional<AttentionCaptureRequest> capture;
  uint64_t capture_request = 0;
  std::deque<std::pair<int, std::vector<std::vector<float>>>> capture_rows;  // (pos, per head)

  // engine_load.cpp
  void load(const LoadProgress& progress);
  // engine.cpp: a request's lifetime
  uint64_t add(const std::vector<int>& ids, const SamplingParams& p, const std::string& text);
  void finish(Request& r, SeqState& s, FinishReason why, const std::string& stop_reason = {});
  void on_token(Request& r, SeqState& s, int token, float prob, bool from_draft = false);
  void record_logprobs(Request& r, SeqState& s, const float* row, int token);
  // Pauses or resumes every sample of r; one_token: resumed for one more token each.
  void set_paused(Request& r, bool paused, bool one_token);
  // engine.cpp: the named phases of a step, in order
  void plan_speculation();
  SchedulerOutput schedule();
  void propose(const SchedulerOutput& so);
  ForwardBatch build_batch(const SchedulerOutput& so) const;
  DeviceSampled rows_for_the_runner_to_sample(const SchedulerOutput& so, const ForwardBatch& batch);
  void execute(const ForwardBatch& batch, DeviceSampled& dev);
  // After the forward pass: a step where every sequence decoded teaches spec_cost its times.
  void learn_spec_cost(const SchedulerOutput& so, const ForwardBatch& batch, const StepTimes& times);
  void advance(const SchedulerOutput& so);
  void fork_parallel_samples(const SchedulerOutput& so, const ForwardBatch& batch);
  void sample(const SchedulerOutput& so, const ForwardBatch& batch, const DeviceSampled& dev);
  void verify(const SchedulerOutput& so, const ForwardBatch& batch);
  std::vector<RequestOutput> collect_outputs();
  // engine_telemetry.cpp
  void follow_newest_request();
  void record_attention(const AttentionRecord& rec);
  void fill_telemetry(const SchedulerOutput& so, const StepTimes& times, double t_step);
};

}  // namespace llmwb
