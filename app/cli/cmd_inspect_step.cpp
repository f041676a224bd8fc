// llmwb-cli inspect-step — one generated token's step seen from inside (the token inspector's
// data, llmwb/step_inspection.h): generates up to the N-th token, then asks the engine for that
// step: the sampler's stages over the top candidates, the logit lens per layer, the token's
// attention in every layer and head, and the time per op.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "command.h"
#include "engine_flags.h"
#include "json_output.h"
#include "llmwb/engine.h"
#include "llmwb/errors.h"

namespace llmwb::cli {
namespace {

// The roofline's expectation for the recorded pass: its bytes at the read ceiling or its FLOPs at
// the peak, whichever takes longer (0 when the ceilings are not given).
double expected_seconds(const StepTiming& t, double read_gbps, double peak_gflops) {
  if (read_gbps <= 0 || peak_gflops <= 0) return 0;
  return std::max((t.weight_bytes + t.kv_bytes) / (read_gbps * 1e9), t.flops / (peak_gflops * 1e9));
}

nlohmann::json to_json(const StepInspection& s, const Engine& engine, int at, bool with_attention, double expected) {
  using nlohmann::json;
  json j;
  j["at"] = at;
  j["position"] = s.position;
  j["runner"] = s.runner;
  j["context_tokens"] = s.context.size();
  const SamplerTrace& t = s.sampler;
  json sampler{{"greedy", t.greedy},          {"stages", t.stages},         {"kept", t.kept},
               {"chosen", t.chosen},          {"chosen_rank", t.chosen_rank}, {"chosen_prob", t.chosen_prob},
               {"draw", t.draw},              {"draw_cdf_before", t.draw_cdf_before}};
  set_text(sampler, "chosen_piece", engine.token_text(t.chosen));
  j["sampler"] = sampler;
  json cands = json::array();
  for (const SamplerCandidate& c : t.candidates) {
    json cj{{"token", c.token},
            {"rank", c.rank},
            {"logit", c.logit},
            {"logit_penalized", c.logit_penalized},
            {"prob_raw", c.prob_raw},
            {"prob_temperature", c.prob_temperature},
            {"probability", c.prob_final}};
    set_text(cj, "piece", c.piece);
    if (c.removed_by != SamplerStage::None) cj["removed_by"] = to_string(c.removed_by);
    cands.push_back(cj);
  }
  j["candidates"] = cands;
  json lens = json::array();
  for (const LensLayer& l : s.lens) {
    json top = json::array();
    for (const LensToken& tk : l.top) {
      json tj{{"token", tk.token}, {"prob", tk.prob}};
      set_text(tj, "piece", tk.piece);
      top.push_back(tj);
    }
    lens.push_back({{"layer", l.layer},
                    {"top", top},
                    {"chosen_rank", l.chosen_rank},
                    {"chosen_prob", l.chosen_prob},
                    {"residual_norm", l.residual_norm},
                    {"attention_norm", l.attention_norm},
                    {"ffn_norm", l.ffn_norm}});
  }
  j["logit_lens"] = lens;
  json att{{"layers", s.attention.n_layers},
           {"heads", s.attention.n_heads},
           {"position", s.attention.position},
           {"blocks_read", s.attention.blocks_read}};
  if (with_attention) att["weights"] = s.attention.weights;   // [layer * heads + head][position]
  j["attention"] = att;
  json ops = json::array();
  for (const OpTime& o : s.timing.ops)
    ops.push_back({{"op", o.op}, {"layer", o.layer}, {"seconds", o.seconds}, {"calls", o.calls}});
  j["timing"] = {{"forward_seconds", s.timing.forward_seconds},
                 {"weight_bytes", s.timing.weight_bytes},
                 {"kv_bytes", s.timing.kv_bytes},
                 {"flops", s.timing.flops},
                 {"ops", ops}};
  if (expected > 0) j["timing"]["expected_seconds"] = expected;
  return j;
}

void print_text(const StepInspection& s, const Engine& engine, int at, double expected) {
  const SamplerTrace& t = s.sampler;
  std::printf("token %d at position %d (%s): %s, rank %d, p = %.4f%s\n", at, s.position + 1, s.runner.c_str(),
              engine.token_text(t.chosen).c_str(), t.chosen_rank, t.chosen_prob, t.greedy ? " (greedy)" : "");
  if (!t.greedy) std::printf("draw u = %.6f (mass before the chosen candidate %.6f)\n", t.draw, t.draw_cdf_before);
  std::printf("\n%5s %8s %-16s %10s %10s %10s  %s\n", "rank", "token", "piece", "logit", "p(T)", "p(final)", "removed by");
  for (const SamplerCandidate& c : t.candidates)
    std::printf("%5d %8d %-16s %10.4f %10.4f %10.4f  %s\n", c.rank, c.token, ("'" + c.piece + "'").c_str(),
                c.logit_penalized, c.prob_temperature, c.prob_final, to_string(c.removed_by));
  std::printf("\nlogit lens (rank of the chosen token after each layer; top tokens there):\n");
  for (const LensLayer& l : s.lens) {
    std::printf("  layer %2d  rank %6d  p %.4f  |x| %8.3f  |attn| %8.3f  |ffn| %8.3f ", l.layer, l.chosen_rank,
                l.chosen_prob, l.residual_norm, l.attention_norm, l.ffn_norm);
    for (const LensToken& tk : l.top) std::printf(" '%s'", tk.piece.c_str());
    std::printf("\n");
  }
  std::map<std::string, double> by_op;
  for (const OpTime& o : s.timing.ops) by_op[o.op] += o.seconds;
  std::printf("\ntime of the recorded pass: %.3f ms (", s.timing.forward_seconds * 1e3);
  bool first = true;
  for (const auto& [op, sec] : by_op) {
    std::printf("%s%s %.3f", first ? "" : ", ", op.c_str(), sec * 1e3);
    first = false;
  }
  std::printf(" ms); reads %.2f MB of weights and %.2f MB of K/V, %.3f GFLOP\n", s.timing.weight_bytes / 1e6,
              s.timing.kv_bytes / 1e6, s.timing.flops / 1e9);
  if (expected > 0)
    std::printf("the roofline expects %.3f ms for those bytes and FLOPs (%.0f %% of it achieved)\n", expected * 1e3,
                100.0 * expected / std::max(s.timing.forward_seconds, 1e-12));
}

int run_inspect_step(const std::vector<std::string>& argv) {
  Args a(argv,
         join({engine_value_flags(), sampling_value_flags(), {"prompt", "at", "top", "lens-top", "read-gbps", "peak-gflops"}}),
         join({engine_bool_flags(), {"json", "no-attention"}}));
  EngineConfig cfg = engine_config_from(a);
  SamplingParams params = sampling_params_from(a);
  const int at = static_cast<int>(a.integer("at", 1, 1, 1 << 20));
  if (params.n != 1) throw UsageError("--n: inspect-step follows one sample (give --n 1)");
  params.max_tokens = at;
  Engine engine(cfg);
  const uint64_t id = engine.add_request(a.str("prompt"), params);
  RequestOutput done;
  while (engine.has_unfinished())
    for (RequestOutput& o : engine.step())
      if (o.request_id == id && o.finished) done = std::move(o);
  if (!done.error.empty()) throw Error("inspect-step", done.error);
  const CompletionOutput& c = done.outputs.at(0);
  if (static_cast<int>(c.token_ids.size()) < at)
    throw Error("--at", "generation stopped (" + std::string(to_string(c.finish_reason)) + ") after " +
                            std::to_string(c.token_ids.size()) + " tokens, before token " + std::to_string(at));
  InspectStepRequest q;
  q.context = done.prompt_token_ids;
  q.context.insert(q.context.end(), c.token_ids.begin(), c.token_ids.begin() + (at - 1));
  q.params = params;
  q.seed = c.seed;
  q.prompt_tokens = static_cast<int>(done.prompt_token_ids.size());
  q.draws_before = params.temperature > 0.f ? at - 1 : 0;
  q.top_candidates = static_cast<int>(a.integer("top", 20, 1, 1000));
  q.lens_top = static_cast<int>(a.integer("lens-top", 5, 1, 100));
  const StepInspection s = engine.inspect_step(q);
  if (s.sampler.chosen != c.token_ids[size_t(at - 1)])
    throw Error("inspect-step", "the recorded step chose token " + std::to_string(s.sampler.chosen) +
                                    " but generation produced " + std::to_string(c.token_ids[size_t(at - 1)]));
  const double expected =
      expected_seconds(s.timing, a.real("read-gbps", 0, 0, 1e6), a.real("peak-gflops", 0, 0, 1e9));
  if (a.flag("json"))
    std::cout << dump_json(to_json(s, engine, at, !a.flag("no-attention"), expected)) << "\n";
  else
    print_text(s, engine, at, expected);
  return 0;
}

const std::string kUsage = std::string("[flags]\n"
                                       "  --prompt TEXT           the prompt (empty = BOS only)\n"
                                       "  --at N                  inspect the N-th generated token (default 1)\n"
                                       "  --top N                 sampler candidates listed (default 20)\n"
                                       "  --lens-top N            tokens per layer in the logit lens (default 5)\n"
                                       "  --json                  one JSON object: candidates, logit_lens, attention, timing\n"
                                       "  --no-attention          leave the attention weights out of the JSON\n"
                                       "  --read-gbps G --peak-gflops F  the machine's ceilings (llmwb-cli roofline):\n"
                                       "                          print the time the roofline expects for the step\n") +
                           sampling_flags_usage() + engine_flags_usage();
CommandRegistration reg({"inspect-step", "one generated token's step seen from inside: sampler, logit lens, attention, time",
                         kUsage.c_str(), run_inspect_step});

}  // namespace
}  // namespace llmwb::cli
