// server_config.h — how the OpenAI-compatible server listens and what it lets in.
#pragma once

#include <cstddef>
#include <string>

namespace llmwb::server {

struct ServerConfig {
  std::string host = "127.0.0.1";   // loopback only unless asked
  int port = 8080;                  // 0: any free port (HttpServer::port() says which)
  std::string api_key;              // non-empty: /v1/* needs "Authorization: Bearer KEY"
  size_t max_queue = 128;           // requests in flight (queued + running) before 429
  size_t max_body_bytes = 1 << 20;  // larger request bodies get 413
};

}  // namespace llmwb::server
