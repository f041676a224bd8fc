// llmwb-cli serve — the OpenAI-compatible HTTP server (docs/SERVER.md): one engine, stepped by
// one thread, serving every client with continuous batching and the prefix cache. Prints the
// address once listening; Ctrl-C (SIGINT) or SIGTERM stops it cleanly.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <ctime>

#include "command.h"
#include "engine_flags.h"
#include "engine_loop.h"
#include "http_server.h"
#include "request_queue.h"
#include "served_model_name.h"

namespace llmwb::cli {
namespace {

int run_serve(const std::vector<std::string>& argv) {
  Args a(argv, join({engine_value_flags(), {"host", "port", "api-key", "max-queue", "max-body-bytes", "model-name"}}),
         engine_bool_flags());
  const EngineConfig engine_config = engine_config_from(a);
  server::ServerConfig sc;
  sc.host = a.str("host", "127.0.0.1");
  sc.port = static_cast<int>(a.integer("port", 8080, 0, 65535));
  sc.api_key = a.str("api-key");
  if (a.has("api-key") && sc.api_key.empty()) throw UsageError("--api-key: must not be empty");
  sc.max_queue = static_cast<size_t>(a.integer("max-queue", 128, 1, 1000));
  sc.max_body_bytes = a.bytes("max-body-bytes", 1 << 20);
  const std::string model_id = a.str("model-name", server::served_model_name(engine_config.model));

  // SIGINT and SIGTERM go to this thread's sigtimedwait only: every thread started below
  // inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);   // a client gone mid-write is a failed write, not a dead server

  server::RequestQueue queue(sc.max_queue);
  server::HttpServer http(queue, sc);
  http.start();   // listening at once: /health says 503 while the model loads
  std::printf("llmwb-cli serve: listening on %s (model %s loading)\n", http.address().c_str(), model_id.c_str());
  std::fflush(stdout);
  server::EngineLoop loop(queue);
  loop.start(engine_config, model_id);
  bool announced = false;
  int rc = 0;
  for (;;) {
    timespec wait{0, 200 * 1000 * 1000};
    const int sig = sigtimedwait(&stop_signals, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) {
      std::fprintf(stderr, "llmwb-cli serve: %s, stopping\n", sig == SIGINT ? "interrupted" : "terminated");
      break;
    }
    if (loop.failed()) {
      std::fprintf(stderr, "llmwb-cli serve: error: %s\n", loop.error().c_str());
      rc = 1;
      break;
    }
    if (!announced && loop.loaded()) {
      std::printf("llmwb-cli serve: ready: %s/v1 serves %s\n", http.address().c_str(), model_id.c_str());
      std::fflush(stdout);
      announced = true;
    }
  }
  loop.stop();   // fails what is in flight, so handlers return
  http.stop();
  return rc;
}

const std::string kUsage = std::string(
    "[flags]\n"
    "  --host ADDR           address to listen on (default 127.0.0.1: this machine only)\n"
    "  --port N              TCP port (default 8080; 0: any free port, printed)\n"
    "  --api-key KEY         require 'Authorization: Bearer KEY' on /v1/* (401 otherwise)\n"
    "  --max-queue N         requests in flight, queued or running, before 429 (default 128)\n"
    "  --max-body-bytes SIZE largest request body, e.g. 1M (default 1M; larger: 413)\n"
    "  --model-name NAME     the model's id in /v1/models (default: the model file's name)\n") +
    engine_flags_usage();
CommandRegistration reg({"serve", "OpenAI-compatible HTTP server (continuous batching across clients)", kUsage.c_str(),
                         run_serve});

}  // namespace
}  // namespace llmwb::cli
