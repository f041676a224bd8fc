// llmwb-cli serve-bench — a serving benchmark for the continuous-batching engine (the shape of
// vLLM's benchmark_serving): N requests with fixed prompt and output lengths arrive all at
// once or as a Poisson process; for each concurrency limit (max_num_seqs) it reports aggregate
// output tokens/s, time to first token, time per output token, and how much KV memory paged
// allocation used against reserving a max-length contiguous buffer per running request.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "command.h"
#include "engine_flags.h"
#include "http_bench.h"
#include "json_output.h"
#include "llmwb/engine.h"
#include "llmwb/stats.h"

namespace llmwb::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Result {
  int concurrency = 0, requests = 0;
  double decode_tps = 0;         // tokens / second over pure-decode steps (no prefill in the batch)
  double seconds = 0, output_tps = 0, mean_ttft = 0, mean_tpot = 0, p50_tpot = 0;
  uint64_t output_tokens = 0, preemptions = 0;
  int peak_blocks = 0, block_size = 0, blocks_total = 0;   // blocks_total: the KV pool's size
  uint64_t peak_slots_filled = 0, peak_slots_allocated = 0;
  double waste_paged = 0;       // 1 - filled/allocated slots, averaged over steps
  uint64_t contiguous_slots = 0;  // what max-length reservation would take for the same peak batch
  double waste_contiguous = 0;
  SpeculativeStats spec;        // with --spec: the proposer's counts over the run
};

Result run_one(const EngineConfig& base, int concurrency, int n_requests, int input_len, int output_len,
               double rate, uint64_t seed, float temperature) {
  EngineConfig cfg = base;
  cfg.max_num_seqs = concurrency;
  Engine e(cfg);
  const int vocab = e.model_info().vocab_size;
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int>> prompts(static_cast<size_t>(n_requests));
  for (auto& p : prompts) {
    if (e.bos_id() >= 0) p.push_back(e.bos_id());
    while (static_cast<int>(p.size()) < input_len) p.push_back(3 + static_cast<int>(rng() % static_cast<uint64_t>(vocab - 3)));
  }
  // Arrival times: all at 0, or exponential gaps at `rate` requests per second.
  std::vector<double> arrive(static_cast<size_t>(n_requests), 0.0);
  if (rate > 0) {
    std::exponential_distribution<double> gap(rate);
    double t = 0;
    for (auto& a : arrive) a = (t += gap(rng));
  }
  SamplingParams p;
  p.temperature = temperature;   // 0: greedy
  p.seed = seed;
  p.max_tokens = output_len;
  p.ignore_eos = true;
  Result r;
  r.concurrency = concurrency;
  r.requests = n_requests;
  std::vector<double> tpots, ttfts;
  size_t next = 0, done = 0;
  uint64_t sum_alloc = 0, sum_filled = 0;   // over steps: time-averaged fragmentation
  uint64_t decode_tokens = 0;
  double decode_seconds = 0;
  const auto t0 = Clock::now();
  auto now = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  while (done < prompts.size()) {
    while (next < prompts.size() && arrive[next] <= now()) e.add_request_tokens(prompts[next++], p);
    if (!e.has_unfinished()) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, arrive[next] - now())));
      continue;
    }
    for (const RequestOutput& o : e.step()) {
      if (!o.finished) continue;
      ++done;
      const auto& c = o.outputs[0];
      r.output_tokens += c.token_ids.size();
      ttfts.push_back(o.time_to_first_token);
      if (c.token_ids.size() > 1)
        tpots.push_back(time_per_output_token(o.total_time, o.time_to_first_token, c.token_ids.size()));
    }
    const StepTelemetry& t = e.telemetry();
    sum_alloc += t.slots_allocated;
    if (t.num_prefill_tokens == 0 && t.num_decode_tokens > 0) {
      // Emitted tokens: one per decoding sequence plus the guesses it accepted (with --spec
      // num_decode_tokens also counts the guesses scored).
      decode_tokens += static_cast<uint64_t>(t.num_decode_seqs) + t.speculative_step.accepted;
      decode_seconds += t.step_seconds;
    }
    sum_filled += t.slots_filled;
    if (t.slots_allocated > r.peak_slots_allocated) {
      r.peak_slots_allocated = t.slots_allocated;
      r.peak_slots_filled = t.slots_filled;
      r.peak_blocks = t.blocks_used;
      // A contiguous engine reserves the full context for every running sequence.
      r.contiguous_slots = uint64_t(t.num_running) * uint64_t(e.model_info().context_length);
    }
  }
  r.seconds = now();
  r.block_size = e.telemetry().block_size;
  r.blocks_total = e.telemetry().blocks_total;
  r.preemptions = e.telemetry().preemptions_total;
  r.spec = e.telemetry().speculative_total;
  r.output_tps = double(r.output_tokens) / r.seconds;
  r.decode_tps = decode_seconds > 0 ? double(decode_tokens) / decode_seconds : 0;
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / double(v.size());
  };
  r.mean_ttft = mean(ttfts);
  r.mean_tpot = mean(tpots);
  r.p50_tpot = median(tpots);
  r.waste_paged = sum_alloc ? 1.0 - double(sum_filled) / double(sum_alloc) : 0;
  r.waste_contiguous = r.contiguous_slots ? 1.0 - double(r.peak_slots_filled) / double(r.contiguous_slots) : 0;
  return r;
}

int run_serve_bench(const std::vector<std::string>& argv) {
  Args a(argv, join({engine_value_flags(), {"concurrency", "num-requests", "input-len", "output-len", "rate", "seed", "temperature",
                                             "url", "api-key", "prompt"}}),
         join({engine_bool_flags(), {"json"}}));
  if (a.has("url")) return run_http_bench(a);
  if (a.has("api-key") || a.has("prompt")) throw UsageError("--api-key and --prompt go with --url");
  if (a.has("max-num-seqs")) throw UsageError("--max-num-seqs: set by --concurrency here");
  EngineConfig cfg = engine_config_from(a);
  const auto conc = a.int_list("concurrency", {1, 4, 16, 64});
  const int n_fixed = static_cast<int>(a.integer("num-requests", 0, 0, 100000));
  const int in_len = static_cast<int>(a.integer("input-len", 32, 1, 1 << 20));
  const int out_len = static_cast<int>(a.integer("output-len", 32, 1, 1 << 20));
  const double rate = a.real("rate", 0.0, 0.0, 1e6);
  const uint64_t seed = a.u64("seed").value_or(0);
  const double temperature = a.real("temperature", 0.0, 0.0, 100.0);
  std::vector<Result> results;
  for (int64_t c : conc) {
    // Enough requests to keep `c` sequences busy twice over, unless given.
    const int n = n_fixed > 0 ? n_fixed : std::max<int>(8, static_cast<int>(2 * c));
    if (!a.flag("json")) std::fprintf(stderr, "concurrency %lld: %d requests ...\n", (long long)c, n);
    results.push_back(run_one(cfg, static_cast<int>(c), n, in_len, out_len, rate, seed, static_cast<float>(temperature)));
  }
  const double base_tps = results.empty() ? 0 : results.front().output_tps;
  const double base_decode = results.empty() ? 0 : results.front().decode_tps;
  if (a.flag("json")) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : results) {
      arr.push_back({{"model", cfg.model}, {"backend", cfg.backend}, {"kv_dtype", cfg.kv_dtype},
                     {"threads", cfg.threads}, {"temperature", temperature},
                     {"concurrency", r.concurrency},
                     {"requests", r.requests}, {"input_len", in_len}, {"output_len", out_len}, {"rate", rate},
                     {"seconds", r.seconds}, {"output_tokens", r.output_tokens}, {"output_tokens_per_s", r.output_tps},
                     {"speedup_vs_first", base_tps > 0 ? r.output_tps / base_tps : 0},
                     {"decode_tokens_per_s", r.decode_tps},
                     {"decode_speedup_vs_first", base_decode > 0 ? r.decode_tps / base_decode : 0}, {"mean_ttft_s", r.mean_ttft},
                     {"mean_tpot_s", r.mean_tpot}, {"p50_tpot_s", r.p50_tpot}, {"preemptions", r.preemptions},
                     {"block_size", r.block_size}, {"peak_blocks", r.peak_blocks}, {"kv_blocks_total", r.blocks_total},
                     {"peak_slots_allocated", r.peak_slots_allocated}, {"peak_slots_filled", r.peak_slots_filled},
                     {"kv_waste_paged", r.waste_paged}, {"contiguous_slots", r.contiguous_slots},
                     {"kv_waste_contiguous", r.waste_contiguous}});
      if (cfg.speculative.enabled())
        arr.back()["speculative"] = {{"method", cfg.speculative.method},
                                     {"num_speculative_tokens", cfg.speculative.num_speculative_tokens},
                                     {"draft_p_min", draft_p_min_json(cfg.speculative)},
                                     {"drafted", r.spec.drafted},
                                     {"accepted", r.spec.accepted},
                                     {"acceptance_rate", r.spec.acceptance_rate()},
                                     {"mean_acceptance_length", r.spec.mean_acceptance_length()}};
    }
    std::cout << dump_json(arr, 2) << "\n";
    return 0;
  }
  std::printf("| conc | reqs | out tok/s | x first | decode tok/s | x first | TTFT ms | TPOT ms | preempt | peak KV slots filled / paged / contiguous | waste paged (avg) | waste contiguous (peak) |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const auto& r : results)
    std::printf("| %d | %d | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %llu | %llu / %llu / %llu | %.1f%% | %.1f%% |\n",
                r.concurrency, r.requests, r.output_tps, base_tps > 0 ? r.output_tps / base_tps : 0, r.decode_tps,
                base_decode > 0 ? r.decode_tps / base_decode : 0, r.mean_ttft * 1e3,
                r.mean_tpot * 1e3, (unsigned long long)r.preemptions, (unsigned long long)r.peak_slots_filled,
                (unsigned long long)r.peak_slots_allocated, (unsigned long long)r.contiguous_slots,
                100 * r.waste_paged, 100 * r.waste_contiguous);
  return 0;
}

const std::string kUsage = std::string(
    "[flags]\n  --concurrency LIST   max_num_seqs values to compare (default 1,4,16,64)\n"
    "  --num-requests N     requests per run (default max(8, 2 x concurrency))\n"
    "  --input-len N        prompt tokens (default 32)\n"
    "  --output-len N       generated tokens (default 32)\n"
    "  --rate R             Poisson arrivals at R requests/s (default 0 = all at once)\n"
    "  --seed S             prompts, arrivals and sampling\n"
    "  --temperature T      sampling temperature of every request (default 0 = greedy)\n"
    "  --json               JSON array out\n"
    "over HTTP, against a running `llmwb-cli serve` (streaming clients, `concurrency` at once):\n"
    "  --url http://HOST:PORT  the server; reports requests/s, output tokens/s, TTFT and ITL p50/p90/p99\n"
    "  --api-key KEY        its key, if it has one\n"
    "  --prompt TEXT        the prompt of every request (default \"Once upon a time\"), or\n"
    "  --input-len N        with --url: a distinct prompt of N token ids per request (ids 3..258)\n") + engine_flags_usage();
CommandRegistration reg({"serve-bench", "continuous-batching throughput at several concurrency limits", kUsage.c_str(),
                         run_serve_bench});

}  // namespace
}  // namespace llmwb::cli
