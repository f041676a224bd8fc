#include "http_bench.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <functional>
#include <mutex>
#include <random>
#include <nlohmann/json.hpp>
#include <thread>

#include "json_output.h"
#include "llmwb/errors.h"

namespace llmwb::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Linear interpolation between closest ranks.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = p / 100.0 * double(v.size() - 1);
  const size_t lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - double(lo)) * (v[hi] - v[lo]);
}

struct Target {
  std::string host, key;
  int port = 0;
};

Target parse_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) throw UsageError("--url: '" + url + "' must start with http://");
  std::string rest = url.substr(scheme.size());
  rest = rest.substr(0, rest.find('/'));
  const size_t colon = rest.rfind(':');
  Target t;
  t.host = colon == std::string::npos ? rest : rest.substr(0, colon);
  try {
    t.port = colon == std::string::npos ? 80 : std::stoi(rest.substr(colon + 1));
  } catch (const std::exception&) {
    throw UsageError("--url: '" + url + "' has no valid port");
  }
  if (t.host.empty() || t.port <= 0 || t.port > 65535) throw UsageError("--url: '" + url + "' is not http://HOST:PORT");
  return t;
}

struct Sample {
  double ttft = 0;
  std::vector<double> itl;   // gaps between token-bearing events
  size_t tokens = 0;
  bool ok = false;
  std::string error;
};

// One streaming completion; each server-sent event carrying text is one token arrival.
Sample one_request(const Target& t, const std::string& body) {
  httplib::Client c(t.host, t.port);
  c.set_read_timeout(600, 0);
  Sample s;
  const auto t0 = Clock::now();
  auto last = t0;
  bool first = true;
  std::string buf;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body;
  req.set_header("Content-Type", "application/json");
  if (!t.key.empty()) req.set_header("Authorization", "Bearer " + t.key);
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    buf.append(data, n);
    for (size_t end; (end = buf.find("\n\n")) != std::string::npos; buf.erase(0, end + 2)) {
      const std::string ev = buf.substr(0, end);
      if (ev.rfind("data: ", 0) != 0) continue;
      const std::string payload = ev.substr(6);
      if (payload == "[DONE]") {
        s.ok = true;
        continue;
      }
      const json j = json::parse(payload, nullptr, false);
      if (j.is_discarded()) continue;
      if (j.contains("error")) s.error = j["error"].value("message", "error");
      if (j.contains("usage") && j["usage"].is_object()) s.tokens = j["usage"].value("completion_tokens", size_t(0));
      if (!j.contains("choices") || j["choices"].empty() || j["choices"][0].value("text", "").empty()) continue;
      const auto now = Clock::now();
      if (first) {
        s.ttft = seconds(now - t0);
        first = false;
      } else {
        s.itl.push_back(seconds(now - last));
      }
      last = now;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  if (!c.send(req, res, err)) s.error = "connection failed: " + httplib::to_string(err);
  else if (res.status != 200) s.error = "HTTP " + std::to_string(res.status) + ": " + res.body;
  if (!s.error.empty()) s.ok = false;
  return s;
}

struct Run {
  int concurrency = 0, requests = 0, failed = 0;
  double seconds = 0;
  size_t tokens = 0;
  std::vector<double> ttft, itl;
};

// The body of request `i`: the same text prompt for all, or with input_len > 0 a prompt of that
// many token ids drawn per request (ids 3..258, inside any vocabulary; distinct prompts, so the
// prefix cache does not flatter the figures, as in the in-process serve-bench).
using BodyFor = std::function<std::string(int)>;

Run run_one(const Target& t, int concurrency, int n, const BodyFor& body_for) {
  Run r;
  r.concurrency = concurrency;
  r.requests = n;
  std::atomic<int> next{0};
  std::mutex mu;
  std::string first_error;
  const auto t0 = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < concurrency; ++c)
    clients.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < n;) {
        Sample s = one_request(t, body_for(i));
        std::lock_guard<std::mutex> lock(mu);
        if (!s.ok) {
          ++r.failed;
          if (first_error.empty()) first_error = s.error.empty() ? "the stream did not end with [DONE]" : s.error;
          continue;
        }
        r.tokens += s.tokens;
        r.ttft.push_back(s.ttft);
        r.itl.insert(r.itl.end(), s.itl.begin(), s.itl.end());
      }
    });
  for (auto& c : clients) c.join();
  r.seconds = seconds(Clock::now() - t0);
  if (r.failed) std::fprintf(stderr, "serve-bench: %d of %d requests failed; first: %s\n", r.failed, n, first_error.c_str());
  return r;
}

}  // namespace

int run_http_bench(const Args& a) {
  for (const char* f : {"rate", "model", "tokenizer", "threads", "backend", "kv-memory", "max-model-len"})
    if (a.has(f)) throw UsageError(std::string("--") + f + ": not with --url (the server's own flags set it)");
  Target t = parse_url(a.str("url"));
  t.key = a.str("api-key");
  const auto conc = a.int_list("concurrency", {1, 4, 16, 64});
  const int n_fixed = static_cast<int>(a.integer("num-requests", 0, 0, 100000));
  const int out_len = static_cast<int>(a.integer("output-len", 32, 1, 1 << 20));
  const double temperature = a.real("temperature", 0.0, 0.0, 2.0);
  const std::string prompt = a.str("prompt", "Once upon a time");
  json body = {{"prompt", prompt}, {"max_tokens", out_len}, {"temperature", temperature}, {"stream", true},
               {"stream_options", {{"include_usage", true}}}, {"ignore_eos", true}};
  const uint64_t seed = a.u64("seed").value_or(0);
  if (a.has("seed")) body["seed"] = seed;
  const int in_len = static_cast<int>(a.integer("input-len", 0, 0, 1 << 20));
  if (in_len > 0 && a.has("prompt")) throw UsageError("--input-len and --prompt: one or the other");
  const BodyFor body_for = [&](int i) {
    if (in_len == 0) return body.dump();
    json b = body;
    std::mt19937_64 rng(seed * 1000003u + static_cast<uint64_t>(i));
    std::vector<int> ids(static_cast<size_t>(in_len));
    for (int& id : ids) id = 3 + static_cast<int>(rng() % 256);
    b["prompt"] = ids;
    return b.dump();
  };
  std::vector<Run> runs;
  for (int64_t c : conc) {
    const int n = n_fixed > 0 ? n_fixed : std::max<int>(8, static_cast<int>(2 * c));
    if (!a.flag("json")) std::fprintf(stderr, "concurrency %lld: %d streaming requests to %s ...\n", (long long)c, n, a.str("url").c_str());
    runs.push_back(run_one(t, static_cast<int>(c), n, body_for));
  }
  int failures = 0;
  if (a.flag("json")) {
    json arr = json::array();
    for (const Run& r : runs) {
      failures += r.failed;
      arr.push_back({{"url", a.str("url")}, {"concurrency", r.concurrency}, {"requests", r.requests}, {"failed", r.failed},
                     {"output_len", out_len}, {"seconds", r.seconds}, {"output_tokens", r.tokens},
                     {"requests_per_s", r.seconds > 0 ? double(r.requests - r.failed) / r.seconds : 0},
                     {"output_tokens_per_s", r.seconds > 0 ? double(r.tokens) / r.seconds : 0},
                     {"ttft_p50_s", percentile(r.ttft, 50)}, {"ttft_p90_s", percentile(r.ttft, 90)},
                     {"ttft_p99_s", percentile(r.ttft, 99)}, {"itl_p50_s", percentile(r.itl, 50)},
                     {"itl_p90_s", percentile(r.itl, 90)}, {"itl_p99_s", percentile(r.itl, 99)}});
    }
    std::cout << dump_json(arr, 2) << "\n";
  } else {
    std::printf("| conc | reqs | req/s | out tok/s | TTFT p50 / p90 / p99 ms | ITL p50 / p90 / p99 ms |\n");
    std::printf("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (const Run& r : runs) {
      failures += r.failed;
      std::printf("| %d | %d | %.2f | %.1f | %.1f / %.1f / %.1f | %.2f / %.2f / %.2f |\n", r.concurrency, r.requests,
                  r.seconds > 0 ? double(r.requests - r.failed) / r.seconds : 0, r.seconds > 0 ? double(r.tokens) / r.seconds : 0,
                  1e3 * percentile(r.ttft, 50), 1e3 * percentile(r.ttft, 90), 1e3 * percentile(r.ttft, 99),
                  1e3 * percentile(r.itl, 50), 1e3 * percentile(r.itl, 90), 1e3 * percentile(r.itl, 99));
    }
  }
  return failures ? 1 : 0;
}

}  // namespace llmwb::cli
