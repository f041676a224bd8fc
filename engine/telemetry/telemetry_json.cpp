#include "telemetry/telemetry_json.h"

#include <nlohmann/json.hpp>

namespace llmwb {

std::string telemetry_to_json(const StepTelemetry& t, bool with_blocks) {
  nlohmann::json j;
  j["step"] = t.step;
  j["time"] = t.time;
  j["step_seconds"] = t.step_seconds;
  j["schedule_seconds"] = t.schedule_seconds;
  j["forward_seconds"] = t.forward_seconds;
  j["sample_seconds"] = t.sample_seconds;
  j["prefill_tokens"] = t.num_prefill_tokens;
  j["decode_tokens"] = t.num_decode_tokens;
  j["prefill_seqs"] = t.num_prefill_seqs;
  j["decode_seqs"] = t.num_decode_seqs;
  j["running"] = t.num_running;
  j["waiting"] = t.num_waiting;
  j["preempted"] = t.num_preempted;
  j["preemptions_total"] = t.preemptions_total;
  j["prefix_cache_hit_tokens_total"] = t.prefix_cache_hit_tokens_total;
  j["prefix_cache_queried_tokens_total"] = t.prefix_cache_queried_tokens_total;
  j["block_size"] = t.block_size;
  j["blocks_total"] = t.blocks_total;
  j["blocks_used"] = t.blocks_used;
  j["blocks_cached"] = t.blocks_cached;
  j["blocks_free"] = t.blocks_free;
  j["slots_allocated"] = t.slots_allocated;
  j["slots_filled"] = t.slots_filled;
  j["fragmentation"] = t.slots_allocated ? 1.0 - double(t.slots_filled) / double(t.slots_allocated) : 0.0;
  j["kv_bytes_total"] = t.kv_bytes_total;
  j["kv_dtype"] = t.kv_dtype;
  if (!t.speculative_method.empty()) {
    auto stats = [](const SpeculativeStats& s) {
      std::vector<double> at;
      for (size_t i = 0; i < s.drafted_at.size(); ++i) at.push_back(s.acceptance_at(i));
      return nlohmann::json{{"drafted", s.drafted},
                            {"accepted", s.accepted},
                            {"drafts", s.drafts},
                            {"acceptance_rate", s.acceptance_rate()},
                            {"mean_acceptance_length", s.mean_acceptance_length()},
                            {"acceptance_per_position", at}};
    };
    j["speculative"] = {{"method", t.speculative_method},
                        {"step", stats(t.speculative_step)},
                        {"total", stats(t.speculative_total)},
                        {"draft_seconds", t.draft_seconds},
                        {"draft_seconds_total", t.draft_seconds_total},
                        {"verify_seconds_total", t.verify_seconds_total}};
    if (t.spec_cost)
      j["speculative"]["cost"] = {{"target_fixed_seconds", t.spec_cost->fixed_seconds},
                                  {"target_per_token_seconds", t.spec_cost->per_token_seconds},
                                  {"draft_pass_seconds", t.spec_cost->draft_pass_seconds}};
  }
  auto seqs = nlohmann::json::array();
  for (const auto& s : t.sequences)
    seqs.push_back({{"request_id", s.request_id},
                    {"sample", s.sample_index},
                    {"tokens", s.num_tokens},
                    {"computed", s.num_computed},
                    {"prompt_tokens", s.num_prompt_tokens},
                    {"state", s.state},
                    {"block_table", s.block_table}});
  j["sequences"] = std::move(seqs);
  if (!t.ranks.empty()) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankTelemetry& r : t.ranks) {
      // Each span as [kind, begin, end, micro_batch, bytes], seconds since the step's start.
      nlohmann::json spans = nlohmann::json::array();
      for (const RankSpan& s : r.spans)
        spans.push_back({rank_span_kind_name(s.kind), s.begin, s.end, s.micro_batch, s.bytes});
      ranks.push_back({{"tp_rank", r.tp_rank}, {"pp_stage", r.pp_stage}, {"step_seconds", r.step_seconds},
                       {"compute_seconds", r.compute_seconds}, {"allreduce_seconds", r.allreduce_seconds},
                       {"recv_seconds", r.recv_seconds}, {"send_seconds", r.send_seconds},
                       {"allreduce_bytes", r.allreduce_bytes}, {"sendrecv_bytes", r.sendrecv_bytes},
                       {"micro_batches", r.micro_batches}, {"wall_seconds", r.wall_seconds},
                       {"bubble_seconds", r.bubble_seconds}, {"bubble_fraction", r.bubble_fraction},
                       {"spans", std::move(spans)}});
    }
    j["ranks"] = std::move(ranks);
  }
  if (with_blocks) {
    auto blocks = nlohmann::json::array();
    for (const auto& b : t.blocks) blocks.push_back({b.owner, b.ref_count, b.filled, b.cached ? 1 : 0});
    j["blocks"] = std::move(blocks);   // [owner, ref_count, filled, cached] per physical block
  }
  return j.dump();
}

}  // namespace llmwb
