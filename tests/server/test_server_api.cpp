// The OpenAI-compatible server in-process (HttpServer + EngineLoop on stories260K, port 0),
// driven by httplib's client: every bad-input class gets its status and OpenAI's error object
// naming the field, auth is enforced only when a key is set, a full queue answers 429 with
// Retry-After, and a stream whose client goes away is aborted and leaves no KV block in use.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "engine_loop.h"
#include "http_server.h"
#include "request_queue.h"
#include "server_metrics.h"
#include "support/test_support.h"

using namespace llmwb;
using namespace llmwb::server;
using nlohmann::json;

namespace {

struct TestServer {
  explicit TestServer(ServerConfig sc = {}) : queue(sc.max_queue), loop(queue) {
    sc.port = 0;
    http = std::make_unique<HttpServer>(queue, sc);
    http->start();
    EngineConfig c;
    c.model = test::shared_path("models/stories260K/stories260K.gguf");
    c.threads = 1;
    c.max_model_len = 128;
    loop.start(c, "stories260K");
    for (int i = 0; i < 500 && !loop.loaded(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~TestServer() {
    loop.stop();
    http->stop();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", http->port());
    c.set_read_timeout(30, 0);
    return c;
  }
  // POST json; returns (status, parsed body).
  std::pair<int, json> post(const std::string& path, const std::string& body, const httplib::Headers& h = {}) const {
    auto c = client();
    auto res = c.Post(path, h, body, "application/json");
    if (!res) return {-1, json()};
    return {res->status, json::parse(res->body, nullptr, false)};
  }
  RequestQueue queue;
  EngineLoop loop;
  std::unique_ptr<HttpServer> http;
};

void expect_error(const std::pair<int, json>& r, int status, const std::string& param, const std::string& code = {}) {
  EXPECT_EQ(r.first, status) << r.second.dump();
  ASSERT_TRUE(r.second.contains("error")) << r.second.dump();
  const json& e = r.second["error"];
  EXPECT_TRUE(e.contains("message") && e.contains("type") && e.contains("param") && e.contains("code")) << e.dump();
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << e.dump();
  }
  if (!code.empty()) {
    EXPECT_EQ(e["code"], code) << e.dump();
  }
}

int metric(const TestServer& s, const std::string& name) {
  auto c = s.client();
  auto res = c.Get("/metrics");
  if (!res) return -1;
  const size_t at = res->body.find("\n" + name + "{");
  if (at == std::string::npos) return -1;
  return std::stoi(res->body.substr(res->body.find("} ", at) + 2));
}

TEST(Server, HealthModelsAndACompletionWork) {
  TestServer s;
  auto c = s.client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "stories260K");
  auto r = s.post("/v1/completions", R"({"model":"stories260K","prompt":"Once upon a time","max_tokens":8,"temperature":0})");
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["object"], "text_completion");
  EXPECT_EQ(r.second["usage"]["completion_tokens"], 8);
  EXPECT_EQ(r.second["choices"][0]["finish_reason"], "length");
}

TEST(Server, MalformedJsonIsA400) {
  TestServer s;
  expect_error(s.post("/v1/completions", R"({"prompt": "x",)"), 400, "", "invalid_json");
  expect_error(s.post("/v1/chat/completions", "[1, 2]"), 400, "", "invalid_type");
}

TEST(Server, AFieldOfTheWrongTypeIsA400NamingIt) {
  TestServer s;
  expect_error(s.post("/v1/completions", R"({"prompt":"x","max_tokens":"ten"})"), 400, "max_tokens", "invalid_type");
  expect_error(s.post("/v1/completions", R"({"prompt":"x","temperature":true})"), 400, "temperature", "invalid_type");
  expect_error(s.post("/v1/chat/completions", R"({"messages":"hi"})"), 400, "messages", "invalid_type");
  expect_error(s.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"stop":3})"), 400, "stop");
  expect_error(s.post("/v1/completions", R"({"prompt":"x","temperature":7})"), 400, "temperature", "invalid_value");
}

TEST(Server, AnUnsupportedFieldIsA400NamingItNeverIgnored) {
  TestServer s;
  expect_error(s.post("/v1/completions", R"({"prompt":"x","logit_bias":{"1":2}})"), 400, "logit_bias",
               "unsupported_parameter");
  expect_error(s.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"tools":[]})"), 400,
               "tools", "unsupported_parameter");
}

TEST(Server, APromptLongerThanTheContextIsA400) {
  TestServer s;
  std::string prompt;
  for (int i = 0; i < 300; ++i) prompt += "Once upon a time ";
  expect_error(s.post("/v1/completions", json({{"prompt", prompt}}).dump()), 400, "prompt", "context_length_exceeded");
  expect_error(s.post("/v1/chat/completions", json({{"messages", {{{"role", "user"}, {"content", prompt}}}}}).dump()),
               400, "messages", "context_length_exceeded");
}

TEST(Server, AnUnknownModelIsA404) {
  TestServer s;
  expect_error(s.post("/v1/completions", R"({"model":"gpt-4o","prompt":"x"})"), 404, "model", "model_not_found");
}

TEST(Server, ABodyAboveTheLimitIsA413) {
  ServerConfig sc;
  sc.max_body_bytes = 1000;
  TestServer s(sc);
  const std::string big = json({{"prompt", std::string(5000, 'a')}}).dump();
  expect_error(s.post("/v1/completions", big), 413, "", "body_too_large");
}

TEST(Server, AnApiKeyIsRequiredOnlyWhenOneIsSet) {
  {
    TestServer open;
    EXPECT_EQ(open.post("/v1/completions", R"({"prompt":"x","max_tokens":2})").first, 200);
  }
  ServerConfig sc;
  sc.api_key = "sesame";
  TestServer s(sc);
  expect_error(s.post("/v1/completions", R"({"prompt":"x","max_tokens":2})"), 401, "", "invalid_api_key");
  expect_error(s.post("/v1/completions", R"({"prompt":"x","max_tokens":2})", {{"Authorization", "Bearer sesamf"}}), 401,
               "", "invalid_api_key");
  EXPECT_EQ(s.post("/v1/completions", R"({"prompt":"x","max_tokens":2})", {{"Authorization", "Bearer sesame"}}).first,
            200);
  auto c = s.client();
  auto h = c.Get("/health");   // health checks need no key
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST(Server, BearerComparisonNeedsTheWholeKey) {
  EXPECT_TRUE(HttpServer::bearer_matches("Bearer k3y", "k3y"));
  EXPECT_FALSE(HttpServer::bearer_matches("Bearer k3", "k3y"));
  EXPECT_FALSE(HttpServer::bearer_matches("Bearer k3yy", "k3y"));
  EXPECT_FALSE(HttpServer::bearer_matches("k3y", "k3y"));
  EXPECT_FALSE(HttpServer::bearer_matches("", "k3y"));
}

TEST(Server, HealthIs503AndRequestsWaitForTheModelUntilItIsLoaded) {
  ServerConfig sc;
  sc.port = 0;
  RequestQueue queue(sc.max_queue);
  HttpServer http(queue, sc);
  http.start();
  httplib::Client c("127.0.0.1", http.port());
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503);
  auto r = c.Post("/v1/completions", R"({"prompt":"x"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  queue.set_model("stories260K", true, 128);
  h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
  http.stop();
}

TEST(Server, AFullQueueIsA429WithRetryAfter) {
  ServerConfig sc;
  sc.max_queue = 1;
  sc.port = 0;
  // No engine loop: the one queued request stays queued.
  RequestQueue queue(sc.max_queue);
  queue.set_model("stories260K", true, 128);
  HttpServer http(queue, sc);
  http.start();
  ASSERT_TRUE(queue.submit(std::make_shared<ServedRequest>()));
  httplib::Client c("127.0.0.1", http.port());
  auto res = c.Post("/v1/completions", R"({"prompt":"x","max_tokens":2})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 429);
  EXPECT_EQ(res->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(res->body)["error"]["code"], "queue_full");
  queue.fail_all(nullptr, "end of test");
  http.stop();
}

TEST(Server, AClientThatGoesAwayMidStreamIsAbortedAndFreesItsBlocks) {
  TestServer s;
  std::atomic<bool> got_data{false};
  {
    auto c = s.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    // 16 samples of up to 120 tokens: long enough that the client leaves well before the end.
    req.body = R"({"prompt":"Once","max_tokens":120,"n":16,"stream":true,"temperature":1.0,"seed":1})";
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      got_data = true;
      return false;   // the client goes away after its first chunk
    };
    c.send(req);
  }
  ASSERT_TRUE(got_data);
  int used = -1;
  for (int i = 0; i < 500; ++i) {
    used = metric(s, "llmwb:kv_blocks_in_use");
    if (used == 0 && s.queue.in_flight() == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(used, 0);
  EXPECT_EQ(s.queue.in_flight(), 0u);
  const auto rows = s.queue.rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].state, "aborted");
  EXPECT_LT(rows[0].completion_tokens, 16u * 120u);
}

}  // namespace
