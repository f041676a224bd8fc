// llmwb-cli bench — prompt processing and generation speed, in the shape of llama.cpp's
// llama-bench: ppN times a prompt of N tokens (one forward pass over all of them, plus the
// sampling of one token), tgN times N generated tokens after a 1-token prompt, counting
// decode steps only. Each test runs once to warm up, then --reps times; the table shows the
// median tokens/s and the standard deviation over the repetitions.
//
// Each test also reports GFLOP/s: tokens/s times the FLOPs a token really costs in this
// engine's forward pass (llmwb/flops.h: no FLOPs for the embedding lookup, the output head
// once per prompt in pp, attention over the context). With --peak the machine's peak FMA rate
// at the same thread count is measured right before and right after each test, and the test's
// share of the higher of the two is reported: on a host whose speed drifts within minutes
// that is the only fair ceiling to hold a figure against.
//
// Prompts are random token ids (seeded, a fresh prompt per repetition) and the prefix cache
// is off, so no repetition reuses another's KV blocks. With --tg-prompt FILE a tg run starts
// from that text instead (a copy-heavy prompt for ngram speculation; its prefill is not timed).
//
// With --read (CPU) a tg test is also held against the machine's read rate right beside it: read
// passes over a buffer of their own (the best of read_patterns(), picked once; the best of three
// passes counts) run before each timed repetition and after the last, and each repetition's
// weight stream (decode steps/s times the bytes of weights one step reads) is divided by the
// mean of the reads around it; the median of those shares is reported. `roofline --kernels` pairs single kernels the same way.
//
// With speculative decoding (--spec), a tg test counts the tokens emitted (the accepted guesses
// too) and reports the proposer's counts: drafted, accepted, acceptance per position, mean
// acceptance length, and the mean time of a decode step's draft and forward (verify) phases.
// With --spec-ab a second engine, the same but without speculation, runs a tg generation before
// the first timed repetition and after each: every speculative repetition is held against the
// mean of the plain ones on either side, from the same first token, seconds apart. On a host
// whose memory rate moves by 1.5x within a minute that pairing is what makes the speed-up a
// figure; the separate runs a script would interleave are tens of seconds apart.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "args.h"
#include "backend/cpu/fma_peak.h"
#include "backend/cpu/fpanel.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/qmatmul.h"
#include "backend/cpu/read_peak.h"
#include "backend/cpu/thread_pool.h"
#include "command.h"
#include "cpu_info.h"
#include "llmwb/stats.h"
#include "engine_flags.h"
#include "json_output.h"
#include "llmwb/engine.h"
#include "llmwb/errors.h"
#include "llmwb/flops.h"

namespace llmwb::cli {
namespace {

using Clock = std::chrono::steady_clock;

// --read: the best of this many read passes stands beside a repetition (~20 ms each at 30 GB/s).
constexpr int kReadPasses = 3;

struct TestResult {
  std::string name;     // pp128, tg128
  int n_prompt = 0, n_gen = 0;
  std::vector<double> samples_ts;   // tokens/s of each repetition
  double median = 0, stddev = 0;
  double flops_per_token = 0;               // forward_flops of the tokens counted, per token
  double peak_before = 0, peak_after = 0;   // GFLOP/s, with --peak
  // With --read (tg): the read passes (GB/s) before each timed repetition and after the last,
  // and each repetition's weight stream (GB/s).
  std::vector<double> reads, weights_gbps;
  // With --spec-ab (tg): the plain engine's tokens/s before the first timed repetition and
  // after each (reps + 1 of them).
  std::vector<double> plain_ts;
  // Each timed repetition's tokens/s over the mean of the plain runs either side of it.
  std::vector<double> spec_speedups() const {
    std::vector<double> x;
    for (size_t i = 0; i < samples_ts.size() && i + 1 < plain_ts.size(); ++i)
      x.push_back(samples_ts[i] / (0.5 * (plain_ts[i] + plain_ts[i + 1])));
    return x;
  }
  std::string error;
  // tg over the timed repetitions: decode steps, their phases, and speculation's counts.
  int64_t steps = 0;
  double forward_seconds = 0, draft_seconds = 0, step_seconds = 0;
  SpeculativeStats spec;
  // The costs the adaptive draft length weighed at the last timed step that knew them.
  std::optional<SpecCostEstimate> spec_cost;
  std::vector<RankTotals> ranks;   // parallel runners: per rank, over the timed steps

  void add_ranks(const std::vector<RankTelemetry>& step) {
    if (ranks.size() != step.size()) ranks.assign(step.size(), {});
    for (size_t i = 0; i < step.size(); ++i) ranks[i].add(step[i]);
  }
  // Per pipeline stage: its ranks' bubble over their wall time.
  std::vector<double> stage_bubbles() const {
    std::vector<double> bubble, wall;
    for (const RankTotals& k : ranks) {
      if (bubble.size() <= size_t(k.pp_stage)) {
        bubble.resize(size_t(k.pp_stage) + 1);
        wall.resize(size_t(k.pp_stage) + 1);
      }
      bubble[size_t(k.pp_stage)] += k.bubble_seconds;
      wall[size_t(k.pp_stage)] += k.wall_seconds;
    }
    for (size_t i = 0; i < bubble.size(); ++i) bubble[i] = wall[i] > 0 ? bubble[i] / wall[i] : 0.0;
    return bubble;
  }

  double gflops() const { return median * flops_per_token / 1e9; }
  // Each repetition's weight stream over the mean of the read passes just before and after it.
  std::vector<double> read_shares() const {
    std::vector<double> f;
    for (size_t i = 0; i < weights_gbps.size() && i + 1 < reads.size(); ++i)
      f.push_back(weights_gbps[i] / (0.5 * (reads[i] + reads[i + 1])));
    return f;
  }
  double peak() const { return std::max(peak_before, peak_after); }
};

// FLOPs per counted token: a ppN run is one prefill of N tokens with logits for the last;
// a tgN run counts the N - 1 decode steps after the prefill, at contexts 1 .. N - 1.
double flops_per_token(const ModelInfo& m, const TestResult& r) {
  if (r.n_prompt > 0) return forward_flops(m, 0, r.n_prompt, 1).total() / r.n_prompt;
  double sum = 0;
  for (int c = 1; c < r.n_gen; ++c) sum += forward_flops(m, c, 1, 1).total();
  return r.n_gen > 1 ? sum / (r.n_gen - 1) : forward_flops(m, 0, 1, 1).total();
}


std::vector<int> random_prompt(int n, int vocab, std::mt19937_64& rng) {
  // Ids 0..2 are <unk>, <s>, </s> in Llama vocabularies: ordinary text never contains them.
  std::uniform_int_distribution<int> d(std::min(3, vocab - 1), vocab - 1);
  std::vector<int> ids(static_cast<size_t>(n));
  for (int& t : ids) t = d(rng);
  return ids;
}

SamplingParams bench_params(int max_tokens, int samples = 1) {
  SamplingParams p;
  p.n = samples;   // parallel samples share the prompt's KV blocks (generate's --n)
  p.temperature = 0.0f;   // greedy: no sampler cost worth measuring, same work every run
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

// Tokens/s of one prompt-processing run: the wall time of the steps until the request ends.
// `r` (when given) accumulates the ranks' telemetry.
double run_pp(Engine& engine, int n_prompt, std::mt19937_64& rng, TestResult* r) {
  const std::vector<int> prompt = random_prompt(n_prompt, engine.model_info().vocab_size, rng);
  engine.add_request_tokens(prompt, bench_params(1));
  const auto t0 = Clock::now();
  double ranks_seconds = 0;   // reading the ranks' telemetry is not the prompt's time
  while (engine.has_unfinished()) {
    engine.step();
    if (r && !engine.telemetry().ranks.empty()) {
      const auto c0 = Clock::now();
      r->add_ranks(engine.telemetry().ranks);
      ranks_seconds += std::chrono::duration<double>(Clock::now() - c0).count();
    }
  }
  return n_prompt / (std::chrono::duration<double>(Clock::now() - t0).count() - ranks_seconds);
}

// Tokens/s of one generation run: only steps that computed decode tokens and no prompt
// tokens are counted, so the prefill of the prompt is excluded. A step emits a token per
// decoding sequence plus the guesses it accepted. `r` (when given) accumulates the phases;
// `step_rate` (when given) gets the counted steps per second.
double run_tg(Engine& engine, int n_gen, int samples, const std::vector<int>& prompt, std::mt19937_64& rng,
              TestResult* r, double* step_rate = nullptr) {
  engine.add_request_tokens(prompt.empty() ? random_prompt(1, engine.model_info().vocab_size, rng) : prompt,
                            bench_params(n_gen, samples));
  double seconds = 0;
  int64_t tokens = 0, steps = 0;
  while (engine.has_unfinished()) {
    const auto t0 = Clock::now();
    engine.step();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    const StepTelemetry& t = engine.telemetry();
    if (t.num_decode_tokens > 0 && t.num_prefill_tokens == 0) {
      seconds += s;
      ++steps;
      tokens += t.num_decode_seqs + static_cast<int64_t>(t.speculative_step.accepted);
      if (r) {
        ++r->steps;
        r->step_seconds += s;
        r->forward_seconds += t.forward_seconds;
        r->draft_seconds += t.draft_seconds;
        r->spec.add(t.speculative_step);
        if (t.spec_cost) r->spec_cost = t.spec_cost;
        if (!t.ranks.empty()) r->add_ranks(t.ranks);
      }
    }
  }
  if (tokens == 0 || seconds <= 0) throw Error("bench", "no decode step was observed");
  if (step_rate) *step_rate = static_cast<double>(steps) / seconds;
  return static_cast<double>(tokens) / seconds;
}

std::string human_bytes(uint64_t b) {
  char buf[64];
  const double v = static_cast<double>(b);
  if (v >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", v / (1024.0 * 1024 * 1024));
  else std::snprintf(buf, sizeof buf, "%.2f MiB", v / (1024.0 * 1024));
  return buf;
}

std::string human_count(uint64_t n) {
  char buf[64];
  const double v = static_cast<double>(n);
  if (v >= 1e9) std::snprintf(buf, sizeof buf, "%.2f B", v / 1e9);
  else if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f K", v / 1e3);
  return buf;
}

std::string base_name(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const auto slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

int run_bench(const std::vector<std::string>& argv) {
  // -n is llama-bench's generation length here; parallel samples per request (generate's --n)
  // are --samples.
  Args a(argv, join({engine_value_flags(), {"p", "n", "r", "reps", "seed", "samples", "tg-prompt"}}),
         join({engine_bool_flags(), {"json", "peak", "read", "spec-ab"}}));
  const int samples = static_cast<int>(a.integer("samples", 1, 1, 64));
  EngineConfig cfg = engine_config_from(a);
  cfg.enable_prefix_caching = false;
  const std::vector<int64_t> pp = a.int_list("p", {128, 512}, 0);
  const std::vector<int64_t> tg = a.int_list("n", {128}, 0);
  const int reps = static_cast<int>(a.integer("r", a.integer("reps", 5, 1, 1000), 1, 1000));
  const uint64_t seed = a.u64("seed").value_or(1234);
  const bool json = a.flag("json");
  const bool with_peak = a.flag("peak");
  const bool with_read = a.flag("read");
  if (with_read && cfg.backend != "cpu")
    throw UsageError("--read: the read rate is the CPU's memory; it is for --backend cpu, not '" + cfg.backend + "'");
  const bool spec_ab = a.flag("spec-ab");
  if (spec_ab && !cfg.speculative.enabled())
    throw UsageError("--spec-ab: holds speculative decoding against plain decoding; give --spec METHOD too");
  if (spec_ab && with_read)
    throw UsageError("--spec-ab: not with --read (each repetition already has its own plain runs beside it)");

  Engine engine(cfg);
  warn_beyond_trained_context(engine, "bench");
  // --spec-ab: the same engine without speculation (a second copy of the weights).
  std::unique_ptr<Engine> plain;
  if (spec_ab && std::any_of(tg.begin(), tg.end(), [](int64_t n) { return n > 0; })) {
    EngineConfig plain_cfg = cfg;
    plain_cfg.speculative = SpeculativeConfig{};
    plain = std::make_unique<Engine>(plain_cfg);
  }
  std::vector<int> tg_prompt;
  if (a.has("tg-prompt")) {
    const std::string path = a.str("tg-prompt");
    std::ifstream f(path, std::ios::binary);
    if (!f) throw UsageError("--tg-prompt: cannot read '" + path + "'");
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    tg_prompt = engine.encode(text, true);
    const int room = engine.model_info().context_length - 1;
    for (int64_t n : tg)
      if (static_cast<int64_t>(tg_prompt.size()) + n > room)
        throw UsageError("--tg-prompt: " + std::to_string(tg_prompt.size()) + " tokens plus -n " + std::to_string(n) +
                         " do not fit the context of " + std::to_string(room + 1));
  }
  const ModelInfo& info = engine.model_info();
  const int threads = cfg.threads > 0 ? cfg.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string backend = cfg.backend;
  if (backend == "cpu") backend += std::string(" (") + cpu::simd_level_name(cpu::simd_level()) + ")";
  if (cfg.kv_dtype != "f32") backend += ", kv " + cfg.kv_dtype;   // llama-bench shows type_k the same way
  if (cfg.tensor_parallel_size > 1 || cfg.pipeline_parallel_size > 1)
    backend += ", tp " + std::to_string(cfg.tensor_parallel_size) + " x pp " + std::to_string(cfg.pipeline_parallel_size);
  if (cfg.pipeline_parallel_size > 1 && cfg.pipeline_micro_batches > 0)
    backend += ", mb " + std::to_string(cfg.pipeline_micro_batches);

  std::vector<TestResult> results;
  for (int64_t p : pp) {
    if (p > 0) {
      TestResult r;
      r.name = "pp" + std::to_string(p);
      r.n_prompt = static_cast<int>(p);
      results.push_back(r);
    }
  }
  for (int64_t n : tg) {
    if (n > 0) {
      TestResult r;
      r.name = "tg" + std::to_string(n) + (samples > 1 ? " x" + std::to_string(samples) : "");
      r.n_gen = static_cast<int>(n);
      results.push_back(r);
    }
  }
  // --read: its own pool at the engine's thread count, idle while the engine runs.
  std::unique_ptr<ThreadPool> read_pool;
  std::unique_ptr<cpu::ReadProbe> probe;
  std::string read_pattern;
  const uint64_t decode_bytes = decode_weight_bytes(info);
  if (with_read && std::any_of(results.begin(), results.end(), [](const TestResult& r) { return r.n_gen > 0; })) {
    read_pool = std::make_unique<ThreadPool>(threads);
    probe = std::make_unique<cpu::ReadProbe>(*read_pool, cpu::default_read_buffer_bytes(), cpu::read_patterns().front(),
                                             cpu::simd_level(), "--read");
    read_pattern = probe->pick_best_pattern();
  }
  std::mt19937_64 rng(seed);
  for (TestResult& r : results) {
    r.flops_per_token = flops_per_token(info, r);
    if (with_peak) r.peak_before = cpu::measure_peak_fma(threads, cpu::simd_level(), 3);
    try {
      const bool paired = probe && r.n_gen > 0;
      const bool ab = plain && r.n_gen > 0;
      for (int i = 0; i <= reps; ++i) {   // i == 0 is the warm-up
        if (paired && i > 0) r.reads.push_back(probe->gbps(kReadPasses));
        // --spec-ab: plain runs from this repetition's first token (a copy of the prompts'
        // generator): before the first timed one (and in the warm-up) and after every one.
        const std::mt19937_64 start = rng;
        if (ab && i <= 1) {
          std::mt19937_64 g = start;
          const double ts = run_tg(*plain, r.n_gen, samples, tg_prompt, g, nullptr);
          if (i == 1) r.plain_ts.push_back(ts);
        }
        double step_rate = 0;
        const double ts = r.n_prompt > 0 ? run_pp(engine, r.n_prompt, rng, i > 0 ? &r : nullptr)
                                         : run_tg(engine, r.n_gen, samples, tg_prompt, rng, i > 0 ? &r : nullptr, &step_rate);
        if (i > 0) r.samples_ts.push_back(ts);
        if (paired && i > 0) r.weights_gbps.push_back(step_rate * static_cast<double>(decode_bytes) / 1e9);
        if (ab && i > 0) {
          std::mt19937_64 g = start;
          r.plain_ts.push_back(run_tg(*plain, r.n_gen, samples, tg_prompt, g, nullptr));
        }
      }
      if (paired) r.reads.push_back(probe->gbps(kReadPasses));
      r.median = median(r.samples_ts);
      r.stddev = stddev(r.samples_ts);
    } catch (const Error& e) {
      r.error = e.what();
      while (engine.has_unfinished()) engine.step();
      while (plain && plain->has_unfinished()) plain->step();
    }
    if (with_peak) r.peak_after = cpu::measure_peak_fma(threads, cpu::simd_level(), 3);
    if (!json) std::fprintf(stderr, "%s done\n", r.name.c_str());
  }

  const std::string model = base_name(info.path.empty() ? cfg.model : info.path);
  // What ran: the CPU, the tuning switches as set, and where the CPU backend runs, what its
  // decode kernels do with them ("auto" resolved per microarchitecture; the quantized kernel
  // set says which prefetch distance and how many streams its GEMV uses; the float distance
  // only where the float weights run as panels).
  const CpuInfo cpu = cpu_info();
  nlohmann::json tuning = nlohmann::json::object();
  for (const auto& [k, v] : info.tuning) tuning[k] = v;
  const bool on_cpu = cfg.backend == "cpu";
  const bool panels = cpu::panel_kernels_active() && cfg.tuning.float_panels;
  const cpu::QuantizedDecodeShape qdecode = cpu::qmatmul_decode_shape();
  const int64_t prefetch_q = qdecode.prefetch_bytes;
  const int64_t prefetch_f = cpu::decode_prefetch().floats;
  const int streams = qdecode.streams;
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const TestResult& r : results) {
      nlohmann::json j = {{"model", model},
                          {"model_path", cfg.model},
                          {"model_size", info.weight_bytes},
                          {"decode_weight_bytes", decode_weight_bytes(info)},
                          {"model_n_params", info.n_params},
                          {"backend", backend},
                          {"n_threads", threads},
                          {"test", r.name},
                          {"n_prompt", r.n_prompt},
                          {"n_gen", r.n_gen},
                          {"reps", reps},
                          {"median_ts", r.median},
                          {"stddev_ts", r.stddev},
                          {"samples_ts", r.samples_ts},
                          {"flops_per_token", r.flops_per_token},
                          {"median_gflops", r.gflops()}};
      cpu.add_to(j);
      j["tuning"] = tuning;
      if (on_cpu) {
        j["cpu_decode"] = {{"prefetch_quantized_bytes", prefetch_q}, {"streams", streams}};
        if (panels) j["cpu_decode"]["prefetch_float_panels_bytes"] = prefetch_f;
      }
      if (with_peak) {
        j["peak_gflops_before"] = r.peak_before;
        j["peak_gflops_after"] = r.peak_after;
        j["fraction_of_peak"] = r.peak() > 0 ? r.gflops() / r.peak() : 0.0;
      }
      if (!r.reads.empty()) {
        const std::vector<double> f = r.read_shares();
        j["read_pattern"] = read_pattern;
        j["read_gbps_beside"] = r.reads;
        j["weights_gbps"] = r.weights_gbps;
        j["median_weights_gbps"] = median(r.weights_gbps);
        j["fraction_of_read"] = f.empty() ? 0.0 : median(f);
        j["fraction_of_read_range"] = f.empty() ? std::vector<double>{} : std::vector<double>{*std::min_element(f.begin(), f.end()), *std::max_element(f.begin(), f.end())};
      }
      if (r.steps > 0) {
        j["decode_steps"] = r.steps;
        j["step_ms"] = 1e3 * r.step_seconds / static_cast<double>(r.steps);
        j["forward_ms"] = 1e3 * r.forward_seconds / static_cast<double>(r.steps);
        j["draft_ms"] = 1e3 * r.draft_seconds / static_cast<double>(r.steps);
      }
      if (cfg.speculative.enabled() && r.n_gen > 0) {
        const SpeculativeStats& s = r.spec;
        std::vector<double> per_position;
        for (size_t i = 0; i < s.drafted_at.size(); ++i) per_position.push_back(s.acceptance_at(i));
        j["speculative"] = {{"method", cfg.speculative.method},
                            {"num_speculative_tokens", cfg.speculative.num_speculative_tokens},
                            {"draft_p_min", draft_p_min_json(cfg.speculative)},
                            {"drafted", s.drafted},
                            {"accepted", s.accepted},
                            {"drafts", s.drafts},
                            {"acceptance_rate", s.acceptance_rate()},
                            {"mean_acceptance_length", s.mean_acceptance_length()},
                            {"acceptance_per_position", per_position}};
        if (r.spec_cost)   // what --spec-k auto weighs (spec/spec_cost.h)
          j["speculative"]["cost"] = {{"target_fixed_ms", 1e3 * r.spec_cost->fixed_seconds},
                                      {"target_per_token_ms", 1e3 * r.spec_cost->per_token_seconds},
                                      {"draft_pass_ms", 1e3 * r.spec_cost->draft_pass_seconds}};
      }
      if (!r.ranks.empty()) {
        // Seconds per timed step, averaged; bubble_fraction: of the step's wall time, the share
        // the rank neither computed nor all-reduced (docs/PARALLEL.md).
        nlohmann::json ranks = nlohmann::json::array();
        for (const RankTotals& k : r.ranks) {
          const double n = static_cast<double>(std::max<int64_t>(1, k.steps));
          ranks.push_back({{"tp_rank", k.tp_rank},
                           {"pp_stage", k.pp_stage},
                           {"steps", k.steps},
                           {"micro_batches", static_cast<double>(k.micro_batches) / n},
                           {"step_ms", 1e3 * k.step_seconds / n},
                           {"wall_ms", 1e3 * k.wall_seconds / n},
                           {"compute_ms", 1e3 * k.compute_seconds / n},
                           {"allreduce_ms", 1e3 * k.allreduce_seconds / n},
                           {"recv_ms", 1e3 * k.recv_seconds / n},
                           {"send_ms", 1e3 * k.send_seconds / n},
                           {"bubble_ms", 1e3 * k.bubble_seconds / n},
                           {"bubble_fraction", k.bubble_fraction()},
                           {"allreduce_bytes", static_cast<double>(k.allreduce_bytes) / n},
                           {"sendrecv_bytes", static_cast<double>(k.sendrecv_bytes) / n}});
        }
        j["ranks"] = std::move(ranks);
        j["pipeline_micro_batches"] = cfg.pipeline_micro_batches;
        j["stage_bubble_fraction"] = r.stage_bubbles();
      }
      if (!r.plain_ts.empty()) {
        const std::vector<double> x = r.spec_speedups();
        j["spec_ab"] = {{"plain_ts", r.plain_ts},
                        {"plain_median_ts", median(r.plain_ts)},
                        {"speedup_per_rep", x},
                        {"speedup_median", x.empty() ? 0.0 : median(x)},
                        {"speedup_range", x.empty() ? std::vector<double>{}
                                                    : std::vector<double>{*std::min_element(x.begin(), x.end()),
                                                                          *std::max_element(x.begin(), x.end())}}};
      }
      if (!r.error.empty()) j["error"] = r.error;
      arr.push_back(j);
    }
    std::printf("%s\n", dump_json(arr, 2).c_str());
    return 0;
  }
  std::printf("| %-24s | %10s | %9s | %-21s | %7s | %6s | %20s | %8s |%s%s\n", "model", "size", "params", "backend",
              "threads", "test", "t/s", "GFLOP/s", with_peak ? " % peak |" : "", with_read ? " % read |" : "");
  std::printf("| %s | %s: | %s: | %s | %s: | %s | %s: | %s: |%s%s\n", std::string(24, '-').c_str(),
              std::string(9, '-').c_str(), std::string(8, '-').c_str(), std::string(21, '-').c_str(),
              std::string(6, '-').c_str(), std::string(6, '-').c_str(), std::string(19, '-').c_str(),
              std::string(7, '-').c_str(), with_peak ? " -----: |" : "", with_read ? " -----: |" : "");
  for (const TestResult& r : results) {
    char ts[64];
    if (r.error.empty()) std::snprintf(ts, sizeof ts, "%.2f ± %.2f", r.median, r.stddev);
    else std::snprintf(ts, sizeof ts, "%s", "error");
    char peak[32] = "";
    if (with_peak) std::snprintf(peak, sizeof peak, " %5.1f%% |", r.peak() > 0 ? 100.0 * r.gflops() / r.peak() : 0.0);
    char read[32] = "";
    if (with_read) {
      const std::vector<double> f = r.read_shares();
      if (f.empty()) std::snprintf(read, sizeof read, " %6s |", "-");
      else std::snprintf(read, sizeof read, " %5.1f%% |", 100.0 * median(f));
    }
    std::printf("| %-24s | %10s | %9s | %-21s | %7d | %6s | %21s | %8.1f |%s%s\n", model.c_str(),
                human_bytes(info.weight_bytes).c_str(), human_count(info.n_params).c_str(), backend.c_str(), threads,
                r.name.c_str(), ts, r.gflops(), peak, read);
  }
  if (cfg.speculative.enabled())
    for (const TestResult& r : results)
      if (r.n_gen > 0 && r.steps > 0)
        std::printf("%s: speculation %s: %llu drafted, %.1f%% accepted, mean acceptance length %.2f; per decode step "
                    "%.3f ms drafting, %.3f ms verifying\n",
                    r.name.c_str(), cfg.speculative.method.c_str(), static_cast<unsigned long long>(r.spec.drafted),
                    100.0 * r.spec.acceptance_rate(), r.spec.mean_acceptance_length(),
                    1e3 * r.draft_seconds / static_cast<double>(r.steps),
                    1e3 * r.forward_seconds / static_cast<double>(r.steps));
  for (const TestResult& r : results) {
    const std::vector<double> x = r.spec_speedups();
    if (x.empty()) continue;
    std::printf("%s: %.2fx plain decoding (median of %zu repetitions, each against the plain runs either side; "
                "%.2f-%.2fx), plain %.2f t/s\n",
                r.name.c_str(), median(x), x.size(), *std::min_element(x.begin(), x.end()),
                *std::max_element(x.begin(), x.end()), median(r.plain_ts));
  }
  if (cfg.speculative.enabled() && cfg.speculative.num_speculative_tokens == 0)
    for (const TestResult& r : results)
      if (r.n_gen > 0 && r.spec_cost)
        std::printf("%s: k auto weighed by cost: a target pass %.2f ms + %.2f ms a token, a draft pass %.2f ms\n",
                    r.name.c_str(), 1e3 * r.spec_cost->fixed_seconds, 1e3 * r.spec_cost->per_token_seconds,
                    1e3 * r.spec_cost->draft_pass_seconds);
  std::string switches;
  for (const auto& [k, v] : info.tuning) switches += (switches.empty() ? "" : ", ") + k + " " + v;
  std::printf("cpu: %s; tuning: %s", cpu.describe().c_str(), switches.c_str());
  if (on_cpu) {
    std::printf("; decode prefetch %lld bytes ahead (quantized)", static_cast<long long>(prefetch_q));
    if (panels) std::printf(", %lld (float panels)", static_cast<long long>(prefetch_f));
    std::printf(", %d stream%s per thread", streams, streams == 1 ? "" : "s");
  }
  std::printf("\n");
  if (probe)
    for (const TestResult& r : results)
      if (!r.reads.empty())
        std::printf("%s: weights streamed at %.1f GB/s (median), %.1f%% of the read passes beside each repetition "
                    "(%.1f-%.1f GB/s, %s)\n",
                    r.name.c_str(), median(r.weights_gbps), 100.0 * median(r.read_shares()),
                    *std::min_element(r.reads.begin(), r.reads.end()), *std::max_element(r.reads.begin(), r.reads.end()),
                    read_pattern.c_str());
  for (const TestResult& r : results) {
    if (r.ranks.empty() || cfg.pipeline_parallel_size < 2) continue;
    double mb = 0;
    for (const RankTotals& k : r.ranks) mb += static_cast<double>(k.micro_batches) / static_cast<double>(std::max<int64_t>(1, k.steps));
    std::string stages;
    for (double b : r.stage_bubbles()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.1f%%", stages.empty() ? "" : " / ", 100.0 * b);
      stages += buf;
    }
    std::printf("%s: pipeline bubble per stage %s (micro-batches per step %.2f)\n", r.name.c_str(), stages.c_str(),
                mb / static_cast<double>(r.ranks.size()));
  }
  int failed = 0;
  for (const TestResult& r : results) {
    if (!r.error.empty()) {
      std::fprintf(stderr, "%s: %s\n", r.name.c_str(), r.error.c_str());
      ++failed;
    }
  }
  return failed ? 1 : 0;
}

const std::string kUsage =
    std::string("[--model PATH] [-p 128,512] [-n 128] [-r 5] [--threads N] [--seed S] [--json] [--peak] [--read] [--spec-ab] [engine flags]\n"
                "  -p LIST                 prompt sizes to time (ppN); 0 = none (default 128,512)\n"
                "  -n LIST                 generation lengths to time (tgN), after a 1-token prompt (default 128)\n"
                "  -r, --reps N            repetitions after one warm-up; the table shows median ± sd (default 5)\n"
                "  --seed S                seed of the random prompts (default 1234)\n"
                "  --samples N             tg: N parallel samples per request, sharing the prompt's KV blocks\n"
                "  --tg-prompt FILE        tg: start from this text instead of one random token (not timed)\n"
                "  --json                  print a JSON array, one object per test\n"
                "  --peak                  measure the peak FMA rate before and after each test and report\n"
                "                          the test's GFLOP/s as a share of the higher one\n"
                "  --read                  (cpu) read passes (best of three) before each timed tg repetition and\n"
                "                          after the last; report the weights' stream as a share of the reads beside it\n"
                "  --spec-ab               with --spec: also run each tg test without speculation (a second engine,\n"
                "                          a second copy of the weights) before the first repetition and after each,\n"
                "                          and report every repetition's speed-up over the plain runs either side\n") +
    engine_flags_usage();

const CommandRegistration reg({"bench", "prompt-processing and generation speed (pp/tg tokens per second, like llama-bench)",
                               kUsage.c_str(), &run_bench});

}  // namespace
}  // namespace llmwb::cli
