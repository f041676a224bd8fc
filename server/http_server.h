// http_server.h — the OpenAI-compatible HTTP front (cpp-httplib): routes, authentication, body
// limits and the OpenAI error object. Handlers parse and check a request, submit it to the
// RequestQueue and wait on its channel; they never touch the engine. Endpoints: GET /health,
// GET /metrics, GET /v1/models, POST /v1/completions, POST /v1/chat/completions (docs/SERVER.md).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "request_queue.h"
#include "server_config.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace llmwb::server {

class HttpServer {
 public:
  HttpServer(RequestQueue& queue, ServerConfig config);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0: a free one) and serves on a thread of its own. Throws
  // llmwb::Error naming the address when it cannot bind.
  void start();
  // Stops listening, fails the requests still waiting and joins every handler thread.
  void stop();
  bool running() const { return running_.load(); }
  int port() const { return port_; }
  std::string address() const;   // "http://127.0.0.1:8080"

  // Constant-time comparison of an Authorization header with "Bearer KEY".
  static bool bearer_matches(const std::string& header, const std::string& key);

 private:
  void routes();
  void completion(const httplib::Request& req, httplib::Response& res, bool chat);

  RequestQueue& queue_;
  ServerConfig config_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  std::atomic<bool> running_{false}, stopping_{false};
  int port_ = 0;
  int64_t created_ = 0;
};

}  // namespace llmwb::server
