// engine_telemetry.cpp — what the engine reports about each step (StepTelemetry: phases,
// batch make-up, queues, KV blocks, prefix-cache counters) and the attention capture behind the
// heatmap, which follows the newest live request.
#include <algorithm>

#include "core/engine_impl.h"
#include "llmwb/errors.h"

namespace llmwb {

// The heatmap follows the newest live request.
void Engine::Impl::follow_newest_request() {
  if (!capture) return;
  uint64_t newest = 0;
  for (auto& [id, r] : requests)
    if (!r->reported_finished) newest = id;
  if (newest && newest != capture_request) {
    capture_request = newest;
    capture_rows.clear();
  }
}

void Engine::Impl::record_attention(const AttentionRecord& rec) {
  const int nq = static_cast<int>(rec.rows.size()) / std::max(1, rec.n_heads);
  for (int qi = 0; qi < nq; ++qi) {
    std::vector<std::vector<float>> heads(rec.rows.begin() + qi * rec.n_heads, rec.rows.begin() + (qi + 1) * rec.n_heads);
    capture_rows.emplace_back(rec.start_pos + qi, std::move(heads));
  }
  while (static_cast<int>(capture_rows.size()) > capture->max_queries) capture_rows.pop_front();
}

void Engine::Impl::fill_telemetry(const SchedulerOutput& so, const StepTimes& times, double t_step) {
  StepTelemetry& t = telemetry;
  t.step = step_count;
  t.time = seconds_since(t_start);
  t.step_seconds = t_step;
  t.schedule_seconds = times.schedule;
  t.forward_seconds = times.forward;
  t.sample_seconds = times.sample;
  t.ranks = runner->rank_telemetry();
  t.draft_seconds = times.draft;
  if (proposer) t.draft_p_min = proposer->draft_p_min();
  t.speculative_step = spec_step;
  t.speculative_total = spec_total;
  if (spec_step.drafts > 0) {
    draft_seconds_total += times.draft;
    verify_seconds_total += times.forward;
  }
  t.draft_seconds_total = draft_seconds_total;
  if (proposer && spec_cost.ready())
    t.spec_cost = SpecCostEstimate{spec_cost.fixed(), spec_cost.per_token(), spec_cost.draft_pass()};
  t.verify_seconds_total = verify_seconds_total;
  t.num_prefill_tokens = so.num_prefill_tokens;
  t.num_decode_tokens = so.num_decode_tokens;
  // so.scheduled's sequences may be gone by now (finished requests are erased): use the counts
  // taken when the step was scheduled.
  t.num_prefill_seqs = so_prefill_seqs;
  t.num_decode_seqs = so_decode_seqs;
  t.num_running = sched->num_running();
  t.num_waiting = sched->num_waiting();
  t.num_preempted = 0;
  for (const Sequence* s : sched->waiting()) t.num_preempted += s->status == SeqStatus::Preempted;
  t.preemptions_total = sched->preemptions_total();
  t.prefix_cache_hit_tokens_total = prefix_hit_tokens;
  t.prefix_cache_queried_tokens_total = prefix_queried_tokens;
  std::vector<const Sequence*> live;
  t.sequences.clear();
  t.num_paused = 0;
  for (auto& [id, r] : requests)
    for (auto& s : r->seqs) {
      if (s->done || s->pending) continue;
      const Sequence& q = *s->seq;
      live.push_back(&q);
      SequenceTelemetry st;
      st.request_id = q.request_id;
      st.sample_index = q.sample_index;
      st.num_tokens = q.num_tokens();
      st.num_computed = q.num_computed_tokens;
      st.num_prompt_tokens = q.num_prompt_tokens;
      st.block_table = q.block_table;
      st.state = q.paused                          ? "paused"
                 : q.status == SeqStatus::Running   ? "running"
                 : q.status == SeqStatus::Preempted ? "preempted"
                                                    : "waiting";
      if (q.paused) ++t.num_paused;
      t.sequences.push_back(std::move(st));
    }
  blocks->fill_telemetry(live, t);
  t.kv_bytes_total = kv_bytes;
  if (capture && !capture_rows.empty()) {
    auto snap = std::make_shared<AttentionSnapshot>();
    snap->request_id = capture_request;
    snap->layer = capture->layer;
    snap->n_heads = file->config.n_heads;
    snap->context_len = capture_rows.back().first + 1;
    auto it = requests.find(capture_request);
    if (it != requests.end()) {
      const auto& toks = it->second->seqs[0]->seq->tokens;
      snap->context_tokens.assign(toks.begin(), toks.begin() + std::min<size_t>(toks.size(), snap->context_len));
    }
    const size_t L = static_cast<size_t>(snap->context_len);
    snap->weights.assign(capture_rows.size() * snap->n_heads * L, 0.f);
    size_t qi = 0;
    for (auto& [pos, heads] : capture_rows) {
      snap->query_positions.push_back(pos);
      for (int h = 0; h < snap->n_heads; ++h) {
        const auto& row = heads[static_cast<size_t>(h)];
        std::copy(row.begin(), row.begin() + std::min(row.size(), L), snap->weights.begin() + (qi * snap->n_heads + h) * L);
      }
      ++qi;
    }
    t.attention = snap;
  } else {
    t.attention.reset();
  }
}

void Engine::set_attention_capture(std::optional<AttentionCaptureRequest> req) {
  if (req) {
    if (req->layer < 0 || req->layer >= impl_->file->config.n_layers)
      throw Error("attention capture", "layer " + std::to_string(req->layer) + " does not exist (the model has " +
                                           std::to_string(impl_->file->config.n_layers) + " layers)");
    if (req->max_queries < 1) req->max_queries = 1;
  }
  const bool layer_changed = !req || !impl_->capture || impl_->capture->layer != req->layer;
  impl_->capture = req;
  if (layer_changed) impl_->capture_rows.clear();
}

}  // namespace llmwb
