// llmwb-cli roofline — the machine's two ceilings for LLM inference on the CPU: memory
// bandwidth (STREAM-style copy / read / triad over arrays far larger than the caches) and the
// peak fp32 FMA rate (an unrolled loop of independent FMAs at the best SIMD level). Decode
// (GEMV) is bound by the first, prefill (GEMM) by the second. With --kernels it also times
// matmul() on tinyllama-1.1b-sized matrices and reports each as a fraction of its ceiling.
//
// STREAM (McCalpin) conventions: copy counts 2 x 4 bytes per element, triad 3 x 4 (the
// write-allocate read is not counted), read 4; the best of several repetitions is reported.
// "read" is what decode does, which only streams weights: it is the GEMV ceiling, measured as
// the best of a few read patterns (read_peak.h: streams per thread, software prefetch or not),
// since no one pattern reaches a core's memory rate on every microarchitecture.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "args.h"
#include "backend/cpu/fma_peak.h"
#include "backend/cpu/fpanel.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/ops.h"
#include "backend/cpu/qrepack.h"
#include "backend/cpu/read_peak.h"
#include "backend/cpu/thread_pool.h"
#include "command.h"
#include "cpu_info.h"
#include "json_output.h"
#include "llmwb/stats.h"
#include "llmwb/tuning_config.h"
#include "llmwb/errors.h"
#include "format/tensor.h"
#include "memory/page_buffer.h"

namespace llmwb::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}


// Arrays of floats on 2 MiB pages (as the engine's repacked weights are), never touched
// before the parallel first-touch fill, so that each thread's share lives in memory near the
// core that streams it.
struct StreamArrays {
  size_t n = 0;
  PageBuffer a, b, c;
  float* fa() { return reinterpret_cast<float*>(a.data()); }
  float* fb() { return reinterpret_cast<float*>(b.data()); }
  float* fc() { return reinterpret_cast<float*>(c.data()); }
};

void share(size_t n, int ith, int nth, size_t* begin, size_t* end) {
  *begin = n * static_cast<size_t>(ith) / static_cast<size_t>(nth);
  *end = n * static_cast<size_t>(ith + 1) / static_cast<size_t>(nth);
}


struct PatternRate {
  cpu::ReadPattern pattern;
  double gbps = 0;   // best of the repetitions
};

struct Bandwidth {
  double copy = 0, read = 0, triad = 0;   // GB/s (1e9 bytes); read: the best pattern's
  std::vector<PatternRate> read_patterns;
  std::string read_pattern;               // the best one's name
};

Bandwidth measure_bandwidth(ThreadPool& pool, uint64_t array_bytes, int reps, cpu::SimdLevel level) {
  StreamArrays s;
  s.n = array_bytes / sizeof(float);
  try {
    s.a = PageBuffer(s.n * sizeof(float), true);
    s.b = PageBuffer(s.n * sizeof(float), true);
    s.c = PageBuffer(s.n * sizeof(float), true);
  } catch (const std::exception&) {
    throw Error("--array-size", "cannot allocate the bandwidth test's 3 arrays of " + std::to_string(array_bytes >> 20) +
                                    " MiB each: give a smaller --array-size");
  }
  float* const fa = s.fa();
  float* const fb = s.fb();
  float* const fc = s.fc();
  pool.run([&](int ith, int nth) {
    size_t b0, b1;
    share(s.n, ith, nth, &b0, &b1);
    for (size_t i = b0; i < b1; ++i) {
      fa[i] = 1.0f;
      fb[i] = 2.0f;
      fc[i] = 0.5f;
    }
  });
  // Each thread reads whole units of its own (first-touched) share of b.
  const int nth = pool.size();
  std::vector<size_t> r0(static_cast<size_t>(nth)), r1(static_cast<size_t>(nth));
  size_t read_n = 0;
  for (int i = 0; i < nth; ++i) {
    const cpu::ReadShare r = cpu::read_share(static_cast<int64_t>(s.n), i, nth);
    r0[static_cast<size_t>(i)] = static_cast<size_t>(r.begin);
    r1[static_cast<size_t>(i)] = static_cast<size_t>(r.end);
    read_n += r1[static_cast<size_t>(i)] - r0[static_cast<size_t>(i)];
  }
  Bandwidth best;
  for (const cpu::ReadPattern& p : cpu::read_patterns()) best.read_patterns.push_back({p, 0.0});
  std::vector<double> read_sums(static_cast<size_t>(nth));
  const double bytes = static_cast<double>(s.n) * sizeof(float);
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    pool.run([&](int ith, int nth_) {
      size_t b0, b1;
      share(s.n, ith, nth_, &b0, &b1);
      std::memcpy(&fc[b0], &fa[b0], (b1 - b0) * sizeof(float));
    });
    best.copy = std::max(best.copy, 2 * bytes / seconds_since(t0) / 1e9);

    for (PatternRate& pr : best.read_patterns) {
      t0 = Clock::now();
      pool.run([&](int ith, int) {
        const size_t i = static_cast<size_t>(ith);
        read_sums[i] = cpu::read_floats(level, pr.pattern, fb + r0[i], static_cast<int64_t>(r1[i] - r0[i]));
      });
      pr.gbps = std::max(pr.gbps, static_cast<double>(read_n) * sizeof(float) / seconds_since(t0) / 1e9);
      double check = 0;
      for (double v : read_sums) check += v;
      // Every float read once, each 2.0: the sums are exact.
      if (check != 2.0 * static_cast<double>(read_n)) {
        throw Error("roofline", "read kernel (" + pr.pattern.name() + ") summed to " + std::to_string(check) +
                                    ", expected " + std::to_string(2.0 * static_cast<double>(read_n)));
      }
    }

    t0 = Clock::now();
    pool.run([&](int ith, int nth_) {
      size_t b0, b1;
      share(s.n, ith, nth_, &b0, &b1);
      const float scalar = 3.0f;
      float* __restrict a = fa;
      const float* __restrict b = fb;
      const float* __restrict c = fc;
      for (size_t i = b0; i < b1; ++i) a[i] = b[i] + scalar * c[i];
    });
    best.triad = std::max(best.triad, 3 * bytes / seconds_since(t0) / 1e9);
  }
  for (const PatternRate& pr : best.read_patterns) {
    if (pr.gbps > best.read) {
      best.read = pr.gbps;
      best.read_pattern = pr.pattern.name();
    }
  }
  return best;
}

struct KernelResult {
  std::string matrix, dtype;
  DType dt = DType::F32;
  int64_t rows = 0, cols = 0, tokens = 0;
  double ms = 0, gbps = 0, gflops = 0;
  // Decode rows: the median over repetitions of the repetition's GB/s over the mean of the read
  // passes just before and after it (ReadProbe), and the lowest and highest of those shares.
  double paired = 0, paired_lo = 0, paired_hi = 0;
  // --prefetch-ab: per decode_prefetch setting, the median GB/s and the median (lowest,
  // highest) over repetitions of its time's ratio to the first setting's in the same round.
  struct Ab {
    std::string setting;
    double gbps = 0, ratio = 0, ratio_lo = 0, ratio_hi = 0;
  };
  std::vector<Ab> ab;
};

// One --prefetch-ab setting: its text (as decode_prefetch takes it) and the distances.
struct PrefetchSetting {
  std::string text;
  cpu::DecodePrefetch distances;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c != ',') {
      cur += c;
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  return out;
}

// Token counts up to this stream their weights from memory (decode, a speculative verify of
// k + 1 tokens, a small batch step), as a forward pass does.
constexpr int64_t kStreamedTokens = 16;

// matmul() on one weight shape. For decode and the other few-token calls the weights rotate
// over enough copies to exceed `working_set` bytes, so every call streams its matrix from
// memory as in a real forward pass rather than from a cache that happens to hold a whole
// matrix.
KernelResult time_matmul(ThreadPool& pool, const char* label, int64_t rows, int64_t cols, DType dt,
                         int64_t tokens, uint64_t working_set, int reps, cpu::ReadProbe* probe,
                         const std::vector<PrefetchSetting>& ab) {
  const uint64_t row_bytes = dtype_row_bytes(dt, cols);
  const uint64_t mat_bytes = row_bytes * static_cast<uint64_t>(rows);
  const uint64_t want = tokens <= kStreamedTokens ? std::max<uint64_t>(1, (working_set + mat_bytes - 1) / mat_bytes) : 1;
  const int copies = static_cast<int>(std::min<uint64_t>(want, 1u << 20));
  std::vector<uint8_t> store;
  try {
    store.resize(mat_bytes * static_cast<uint64_t>(copies));
  } catch (const std::bad_alloc&) {
    throw Error("--working-set", "cannot allocate " + std::to_string(copies) + " copies of a " +
                                     std::to_string(mat_bytes >> 10) + " KiB matrix (" +
                                     std::to_string((mat_bytes * static_cast<uint64_t>(copies)) >> 20) +
                                     " MiB): give a smaller --working-set");
  }
  {
    std::mt19937 rng(42);
    std::normal_distribution<float> nd(0.0f, 0.02f);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : row) v = nd(rng);
      quantize_row(dt, row.data(), store.data() + static_cast<uint64_t>(r) * row_bytes, cols);
    }
    for (int c = 1; c < copies; ++c) std::memcpy(store.data() + mat_bytes * c, store.data(), mat_bytes);
  }
  std::vector<TensorView> views(static_cast<size_t>(copies));
  for (int c = 0; c < copies; ++c) {
    TensorView& v = views[static_cast<size_t>(c)];
    v.name = label;
    v.dtype = dt;
    v.shape = {rows, cols};
    v.data = store.data() + mat_bytes * c;
    v.nbytes = mat_bytes;
  }
  std::vector<float> x(static_cast<size_t>(tokens * cols)), y(static_cast<size_t>(tokens * rows));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : x) v = u(rng);

  // The block types run as the engine runs them: over their row-interleaved copies (qrepack.h),
  // which replace the originals here too.
  // So do the float types where AVX-512 runs: over their 16-row panels (fpanel.h).
  std::vector<std::unique_ptr<cpu::PackedQ4>> packed;
  std::vector<cpu::FloatPanels> panels;
  if (cpu::repackable(dt)) {
    for (const TensorView& v : views) packed.push_back(cpu::repack_q4(v, pool));
    std::vector<uint8_t>().swap(store);
  } else if (cpu::panel_dtype(dt) && cpu::panel_kernels_active() && cpu::float_panels_enabled()) {
    for (const TensorView& v : views) panels.push_back(cpu::pack_panels(v, pool));
    std::vector<uint8_t>().swap(store);
  }
  auto run_all = [&] {
    if (!packed.empty()) {
      for (const auto& p : packed) cpu::qmatmul_packed(pool, *p, x.data(), tokens, y.data());
    } else if (!panels.empty()) {
      for (const auto& p : panels) cpu::panel_matmul(pool, p, x.data(), tokens, y.data());
    } else {
      for (const TensorView& v : views) cpu::matmul(pool, v, x.data(), tokens, y.data());
    }
  };
  run_all();   // warm-up
  std::vector<double> per_call, shares;
  const bool paired = probe != nullptr && tokens == 1;
  double read_before = paired ? probe->gbps() : 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    run_all();
    const double s = seconds_since(t0) / copies;
    per_call.push_back(s);
    if (paired) {
      const double read_after = probe->gbps();
      shares.push_back(static_cast<double>(mat_bytes) / s / 1e9 / (0.5 * (read_before + read_after)));
      read_before = read_after;
    }
  }
  KernelResult k;
  k.matrix = label;
  k.dtype = dtype_name(dt);
  k.dt = dt;
  k.rows = rows;
  k.cols = cols;
  k.tokens = tokens;
  const double s = median(per_call);
  k.ms = s * 1e3;
  k.gbps = static_cast<double>(mat_bytes) / s / 1e9;
  k.gflops = 2.0 * static_cast<double>(rows * cols * tokens) / s / 1e9;
  if (paired) {
    k.paired = median(shares);
    k.paired_lo = *std::min_element(shares.begin(), shares.end());
    k.paired_hi = *std::max_element(shares.begin(), shares.end());
  }
  // Decode prefetch A/B: every setting once per round, in reverse order every other round, so
  // a host whose memory rate drifts hits each setting alike; ratios are taken within a round.
  if (tokens <= kStreamedTokens && ab.size() >= 2 && (!packed.empty() || !panels.empty())) {
    const cpu::DecodePrefetch before = cpu::decode_prefetch();
    std::vector<std::vector<double>> secs(ab.size());
    for (int r = 0; r < reps; ++r) {
      for (size_t n = 0; n < ab.size(); ++n) {
        const size_t i = r % 2 ? ab.size() - 1 - n : n;
        cpu::set_decode_prefetch(ab[i].distances);
        const auto t0 = Clock::now();
        run_all();
        secs[i].push_back(seconds_since(t0) / copies);
      }
    }
    cpu::set_decode_prefetch(before);
    for (size_t i = 0; i < ab.size(); ++i) {
      std::vector<double> ratio;
      for (int r = 0; r < reps; ++r) ratio.push_back(secs[0][static_cast<size_t>(r)] / secs[i][static_cast<size_t>(r)]);
      KernelResult::Ab x;
      x.setting = ab[i].text;
      x.gbps = static_cast<double>(mat_bytes) / median(secs[i]) / 1e9;
      x.ratio = median(ratio);
      x.ratio_lo = *std::min_element(ratio.begin(), ratio.end());
      x.ratio_hi = *std::max_element(ratio.begin(), ratio.end());
      k.ab.push_back(x);
    }
  }
  return k;
}

int run_roofline(const std::vector<std::string>& argv) {
  Args a(argv, {"threads", "array-size", "reps", "dtypes", "tokens", "working-set", "prefetch-ab"}, {"json", "kernels"});
  const int threads = static_cast<int>(a.integer("threads", 0, 0, 1024));
  const uint64_t array_bytes = a.bytes("array-size", cpu::default_read_buffer_bytes());
  const int reps = static_cast<int>(a.integer("reps", 5, 1, 1000));
  const bool json = a.flag("json");
  if (array_bytes < (uint64_t{1} << 20)) throw UsageError("--array-size: at least 1M");
  if (a.has("prefetch-ab") && !a.flag("kernels")) throw UsageError("--prefetch-ab: times the --kernels decode rows; add --kernels");

  // The --kernels options, checked before anything is measured.
  std::vector<DType> dtypes;
  for (const std::string& name : split_commas(a.str("dtypes", "F32,F16"))) {
    DType dt;
    if (!dtype_from_name(name, &dt)) throw UsageError("--dtypes: unknown type '" + name + "'");
    dtypes.push_back(dt);
  }
  const std::vector<int64_t> tokens = a.int_list("tokens", {1, 128, 512});
  const uint64_t working_set = a.bytes("working-set", uint64_t{1} << 30);
  std::vector<PrefetchSetting> ab;
  if (a.has("prefetch-ab")) {
    for (const std::string& v : split_commas(a.str("prefetch-ab"))) {
      TuningConfig t;
      try {
        t.set("decode_prefetch", v);
      } catch (const Error& e) {   // "tuning: decode_prefetch: '100' is not one of ..."
        const std::string m = e.what(), w = e.where().empty() ? "" : e.where() + ": ";
        throw UsageError("--prefetch-ab: " + (m.rfind(w, 0) == 0 ? m.substr(w.size()) : m));
      }
      ab.push_back({v, cpu::decode_prefetch_from(t.decode_prefetch)});
    }
    if (ab.size() < 2) throw UsageError("--prefetch-ab: give at least two settings, e.g. off,128,1024");
  }
  if (!ab.empty()) {
    if (std::none_of(tokens.begin(), tokens.end(), [](int64_t t) { return t <= kStreamedTokens; }))
      throw UsageError("--prefetch-ab: times rows of up to " + std::to_string(kStreamedTokens) +
                       " tokens; give --tokens with one of them (1 = decode)");
    bool prefetching = false;
    for (DType dt : dtypes)
      prefetching = prefetching || cpu::repackable(dt) ||
                    (cpu::panel_dtype(dt) && cpu::panel_kernels_active() && cpu::float_panels_enabled());
    if (!prefetching)
      throw UsageError("--prefetch-ab: none of --dtypes runs a prefetching decode kernel here (the repacked block "
                       "types do; F32/F16/BF16 only as AVX-512 float panels)");
  }

  ThreadPool pool(threads);
  const int nth = pool.size();
  const cpu::SimdLevel level = cpu::simd_level();

  const Bandwidth bw = measure_bandwidth(pool, array_bytes, reps, level);
  std::vector<int> counts;
  for (int t = 1; t < nth; t *= 2) counts.push_back(t);
  counts.push_back(nth);
  std::vector<double> peaks;
  for (int t : counts) peaks.push_back(cpu::measure_peak_fma(t, level, reps));

  std::vector<KernelResult> kernels;
  if (a.flag("kernels")) {
    // tinyllama-1.1b: dim 2048, hidden 5632, vocab 32000.
    struct Shape {
      const char* label;
      int64_t rows, cols;
    };
    const Shape shapes[] = {{"2048x2048 (attn q/o)", 2048, 2048},
                            {"5632x2048 (ffn w1/w3)", 5632, 2048},
                            {"2048x5632 (ffn w2)", 2048, 5632},
                            {"32000x2048 (output)", 32000, 2048}};
    std::unique_ptr<cpu::ReadProbe> probe;
    if (std::find(tokens.begin(), tokens.end(), 1) != tokens.end()) {
      cpu::ReadPattern best = bw.read_patterns.front().pattern;
      for (const PatternRate& pr : bw.read_patterns)
        if (pr.pattern.name() == bw.read_pattern) best = pr.pattern;
      probe = std::make_unique<cpu::ReadProbe>(pool, array_bytes, best, level, "--array-size");
    }
    for (DType dt : dtypes) {
      for (const Shape& s : shapes) {
        for (int64_t t : tokens) {
          kernels.push_back(time_matmul(pool, s.label, s.rows, s.cols, dt, t, working_set, reps, probe.get(), ab));
          if (!json) std::fprintf(stderr, ".");
        }
      }
    }
    if (!json) std::fprintf(stderr, "\n");
  }

  const double peak_all = peaks.back();
  // The roofline a kernel row is held to: GFLOP/s the read bandwidth feeds at the row's flops
  // per weight byte, capped by the fp32 FMA peak for the float types (a verify of k + 1 tokens
  // crosses from the one to the other). The block types multiply with integer dots, which that
  // peak does not bound: their few-token rows are held to the bandwidth alone, their prefill
  // rows to the peak as before.
  auto roofline = [&](const KernelResult& k) {
    const double fed = k.gbps > 0 ? k.gflops / k.gbps * bw.read : 0;
    if (!cpu::panel_dtype(k.dt)) return k.tokens <= kStreamedTokens ? fed : peak_all;   // not F32 / F16 / BF16
    return std::min(fed, peak_all);
  };
  if (json) {
    nlohmann::json j;
    cpu_info().add_to(j);
    j["simd"] = cpu::simd_level_name(level);
    j["threads"] = nth;
    j["array_bytes"] = array_bytes;
    j["bandwidth_gbps"] = {{"copy", bw.copy}, {"read", bw.read}, {"triad", bw.triad}};
    j["read_pattern"] = bw.read_pattern;
    nlohmann::json rp = nlohmann::json::array();
    for (const PatternRate& pr : bw.read_patterns) {
      rp.push_back({{"pattern", pr.pattern.name()}, {"streams", pr.pattern.streams},
                    {"prefetch_bytes", pr.pattern.prefetch_bytes}, {"gbps", pr.gbps}});
    }
    j["read_patterns_gbps"] = rp;
    nlohmann::json pk = nlohmann::json::object();
    for (size_t i = 0; i < counts.size(); ++i) pk[std::to_string(counts[i])] = peaks[i];
    j["peak_fma_gflops"] = pk;
    nlohmann::json ks = nlohmann::json::array();
    for (const KernelResult& k : kernels) {
      ks.push_back({{"matrix", k.matrix}, {"dtype", k.dtype}, {"rows", k.rows}, {"cols", k.cols},
                    {"tokens", k.tokens}, {"ms", k.ms}, {"weight_gbps", k.gbps}, {"gflops", k.gflops},
                    {"fraction_of_read_bw", k.gbps / bw.read}, {"fraction_of_peak", k.gflops / peak_all},
                    {"roofline_gflops", roofline(k)}, {"fraction_of_roofline", k.gflops / roofline(k)}});
      if (k.tokens == 1) {
        ks.back()["paired_fraction_of_read_bw"] = k.paired;
        ks.back()["paired_fraction_range"] = {k.paired_lo, k.paired_hi};
      }
      if (!k.ab.empty()) {
        nlohmann::json abj = nlohmann::json::array();
        for (const KernelResult::Ab& x : k.ab)
          abj.push_back({{"decode_prefetch", x.setting}, {"weight_gbps", x.gbps}, {"speed_ratio_to_first", x.ratio},
                         {"speed_ratio_range", {x.ratio_lo, x.ratio_hi}}});
        ks.back()["prefetch_ab"] = abj;
      }
    }
    if (a.flag("kernels")) j["kernels"] = ks;
    std::printf("%s\n", dump_json(j, 2).c_str());
    return 0;
  }
  std::printf("cpu: %s, simd %s, %d threads\n", cpu_info().describe().c_str(), cpu::simd_level_name(level), nth);
  std::printf("memory bandwidth (3 arrays x %.0f MiB, best of %d):\n", static_cast<double>(array_bytes) / (1 << 20),
              reps);
  std::printf("  copy  %8.2f GB/s\n  read  %8.2f GB/s  (best pattern: %s)\n  triad %8.2f GB/s\n", bw.copy, bw.read,
              bw.read_pattern.c_str(), bw.triad);
  std::printf("  read patterns:");
  for (const PatternRate& pr : bw.read_patterns) std::printf("  %s %.1f;", pr.pattern.name().c_str(), pr.gbps);
  std::printf("\n");
  std::printf("peak fp32 FMA (%s, best of %d):\n", cpu::simd_level_name(level), reps);
  for (size_t i = 0; i < counts.size(); ++i) {
    std::printf("  %3d thread%s %9.1f GFLOP/s\n", counts[i], counts[i] == 1 ? " " : "s", peaks[i]);
  }
  if (!kernels.empty()) {
    std::printf("\nmatmul (median of %d; %% ceiling: GFLOP/s against the roofline, the read bandwidth x the "
                "row's flops per weight byte,\n  at most the fp32 peak for float weights and for prefill "
                "rows (decode rows: weight bytes / time vs read bandwidth);\n  rows of up to %lld tokens "
                "stream their weights from memory (--working-set);\n  paired: each decode repetition against the mean of "
                "read passes just before and after it, median (lowest-highest))\n",
                reps, static_cast<long long>(kStreamedTokens));
    std::printf("| %-22s | %-5s | %6s | %9s | %8s | %9s | %9s | %-20s |\n", "matrix", "dtype", "tokens", "ms", "GB/s",
                "GFLOP/s", "% ceiling", "paired % of read");
    std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(24, '-').c_str(), std::string(7, '-').c_str(),
                std::string(8, '-').c_str(), std::string(11, '-').c_str(), std::string(10, '-').c_str(),
                std::string(11, '-').c_str(), std::string(11, '-').c_str(), std::string(22, '-').c_str());
    for (const KernelResult& k : kernels) {
      const double frac = k.gflops / roofline(k);
      char pairs[64] = "";
      if (k.tokens == 1)
        std::snprintf(pairs, sizeof pairs, "%.1f%% (%.0f-%.0f)", 100.0 * k.paired, 100.0 * k.paired_lo,
                      100.0 * k.paired_hi);
      std::printf("| %-22s | %-5s | %6lld | %9.3f | %8.2f | %9.1f | %8.1f%% | %-20s |\n", k.matrix.c_str(),
                  k.dtype.c_str(), static_cast<long long>(k.tokens), k.ms, k.gbps, k.gflops, 100.0 * frac, pairs);
    }
    bool any_ab = false;
    for (const KernelResult& k : kernels) any_ab = any_ab || !k.ab.empty();
    if (any_ab) {
      std::printf("\ndecode prefetch A/B (settings interleaved per repetition; speed over the first setting's, "
                  "median (lowest-highest)):\n");
      for (const KernelResult& k : kernels) {
        if (k.ab.empty()) continue;
        std::printf("  %-22s %-5s %2lld", k.matrix.c_str(), k.dtype.c_str(), static_cast<long long>(k.tokens));
        for (const KernelResult::Ab& x : k.ab)
          std::printf("  %s %.2f GB/s %.2fx (%.2f-%.2f);", x.setting.c_str(), x.gbps, x.ratio, x.ratio_lo, x.ratio_hi);
        std::printf("\n");
      }
    }
  }
  return 0;
}

const CommandRegistration reg({"roofline", "memory bandwidth and peak FMA rate of this machine (the roofline ceilings)",
                               "[--threads N] [--array-size 512M] [--reps 5] [--json]\n"
                               "       [--kernels [--dtypes F32,F16] [--tokens 1,128,512] [--working-set 1G]\n"
                               "        [--prefetch-ab off,128,1024]]\n"
                               "  --threads N        threads (default: all)\n"
                               "  --array-size SIZE  bytes per STREAM array (default 512M, or twice the L3 if bigger; keep\n"
                               "                     it far above the L3)\n"
                               "  --reps N           repetitions; bandwidth and peak report the best (default 5)\n"
                               "  --kernels          also time matmul on tinyllama-1.1b shapes (median of reps); decode\n"
                               "                     (--tokens 1) rows also give a paired share: each repetition against\n"
                               "                     read passes right before and after it, for hosts whose rate drifts\n"
                               "  --dtypes LIST      weight types for --kernels (F32,F16,BF16,Q8_0,Q4_0,Q4_K,...; the block\n"
                               "                     types INT4_G32/INT4_G128/Q4_0/Q4_1/Q8_0/Q4_K/Q5_K/Q6_K run\n"
                               "                     repacked, as the engine runs them)\n"
                               "  --tokens LIST      token counts for --kernels: 1 = decode GEMV, more = prefill GEMM\n"
                               "  --working-set SIZE weights of rows up to 16 tokens rotate over copies totalling this (default 1G)\n"
                               "  --prefetch-ab LIST rows of up to 16 tokens also run under each decode_prefetch setting (auto, off or\n"
                               "                     bytes), interleaved in every repetition, with each one's speed over\n"
                               "                     the first's: the per-microarchitecture tuning measurement\n"
                               "  --json             print one JSON object instead of the table",
                               &run_roofline});

}  // namespace
}  // namespace llmwb::cli
