#include "http_server.h"

#include <httplib.h>

#include <sys/socket.h>
#include <netinet/in.h>

#include <chrono>

#include "api_error.h"
#include "llmwb/chat_prompt.h"
#include "llmwb/errors.h"
#include "openai_request.h"
#include "openai_response.h"

namespace llmwb::server {

using nlohmann::json;
using namespace std::chrono_literals;

namespace {

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 429 || e.status == 503) res.set_header("Retry-After", "1");
  if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(OpenAIResponse::dump(e.to_json()), "application/json");
}

// The engine's refusal of a prompt as a 400 naming the field.
ApiError refusal(const ChannelEvent& ev, bool chat) {
  const std::string where = ev.error_where;
  const std::string prompt_param = chat ? "messages" : "prompt";
  if (where == "prompt") return ApiError(400, ev.error, prompt_param, "context_length_exceeded");
  if (where == "kv cache") return ApiError(400, ev.error, "max_tokens", "context_length_exceeded");
  if (where.rfind("SamplingParams.", 0) == 0) return ApiError(400, ev.error, where.substr(15), "invalid_value");
  if (where.rfind("chat message", 0) == 0) return ApiError(400, ev.error, "messages", "invalid_value");
  return ApiError(400, ev.error, "", "invalid_value");
}

// cpp-httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when Debian
// built the library): 64 clients connecting at once overflow it and the kernel drops SYNs,
// which clients retry a second later. Linux lets listen() be called again on a listening
// socket to raise its backlog; the socket is found by its port.
void widen_listen_backlog(int port) {
  for (int fd = 0; fd < 4096; ++fd) {
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    const int p = addr.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port)
                  : addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port) : -1;
    if (p == port) ::listen(fd, SOMAXCONN);
  }
}

}  // namespace

HttpServer::HttpServer(RequestQueue& queue, ServerConfig config)
    : queue_(queue), config_(std::move(config)), http_(std::make_unique<httplib::Server>()) {}

HttpServer::~HttpServer() { stop(); }

bool HttpServer::bearer_matches(const std::string& header, const std::string& key) {
  const std::string want = "Bearer " + key;
  // Every byte is compared whatever the first difference: the time says nothing of the key.
  unsigned diff = header.size() != want.size();
  const size_t n = std::max(header.size(), want.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char a = i < header.size() ? static_cast<unsigned char>(header[i]) : 0;
    const unsigned char b = i < want.size() ? static_cast<unsigned char>(want[i]) : 0;
    diff |= static_cast<unsigned>(a ^ b);
  }
  return diff == 0;
}

std::string HttpServer::address() const {
  const bool v6 = config_.host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + config_.host + "]" : config_.host) + ":" + std::to_string(port_);
}

void HttpServer::start() {
  created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  // One thread per connection in flight: every queued request may hold one while it streams,
  // and a few more answer /health, /metrics and the 429s.
  const size_t threads = std::min<size_t>(config_.max_queue + 8, 1024);
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(config_.max_body_bytes);
  http_->set_keep_alive_timeout(2);
  routes();
  port_ = config_.port == 0 ? http_->bind_to_any_port(config_.host) : (http_->bind_to_port(config_.host, config_.port) ? config_.port : -1);
  if (port_ <= 0)
    throw Error("--host/--port", "cannot listen on " + config_.host + ":" + std::to_string(config_.port) +
                                     " (in use, or not an address of this machine)");
  widen_listen_backlog(port_);
  running_ = true;
  stopping_ = false;
  listener_ = std::thread([this] { http_->listen_after_bind(); });
}

void HttpServer::stop() {
  if (!listener_.joinable()) return;
  stopping_ = true;
  http_->stop();
  listener_.join();
  running_ = false;
}

void HttpServer::routes() {
  auto guarded = [this](auto&& fn) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        fn(req, res);
      } catch (const ApiError& e) {
        send_error(res, e);
      } catch (const std::exception& e) {
        send_error(res, ApiError(500, std::string("internal error: ") + e.what(), "", "internal_error", "server_error"));
      }
    };
  };
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (config_.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    if (bearer_matches(req.get_header_value("Authorization"), config_.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, ApiError(401, "a valid API key is required: Authorization: Bearer KEY", "", "invalid_api_key",
                             "authentication_error"));
    return httplib::Server::HandlerResponse::Handled;
  });
  // Statuses httplib sets itself (404 no such route, 413 body too large, 400 bad request line)
  // get OpenAI's error object too.
  http_->set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message = "HTTP " + std::to_string(res.status), code;
    if (res.status == 404) message = "no route " + req.method + " " + req.path, code = "not_found";
    if (res.status == 413) message = "the request body is larger than the server accepts (--max-body-bytes)", code = "body_too_large";
    if (res.status == 405) message = "method " + req.method + " not allowed on " + req.path;
    send_error(res, ApiError(res.status, message, "", code));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const bool ok = queue_.ready();
    res.status = ok ? 200 : 503;
    res.set_content(ok ? R"({"status":"ok"})" : R"({"status":"loading"})", "application/json");
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(queue_.metrics().prometheus_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http_->Get("/v1/models", guarded([this](const httplib::Request&, httplib::Response& res) {
    json data = json::array();
    if (queue_.ready())
      data.push_back({{"id", queue_.model_id()}, {"object", "model"}, {"created", created_}, {"owned_by", "llmwb"},
                      {"max_model_len", queue_.context_length()}});
    res.set_content(OpenAIResponse::dump({{"object", "list"}, {"data", data}}), "application/json");
  }));
  http_->Post("/v1/completions", guarded([this](const httplib::Request& req, httplib::Response& res) {
    completion(req, res, false);
  }));
  http_->Post("/v1/chat/completions", guarded([this](const httplib::Request& req, httplib::Response& res) {
    completion(req, res, true);
  }));
}

void HttpServer::completion(const httplib::Request& req, httplib::Response& res, bool chat) {
  if (!queue_.ready()) throw ApiError(503, "the model is not loaded yet", "", "model_not_ready", "server_error");
  json body;
  try {
    body = json::parse(req.body);
  } catch (const json::parse_error& e) {
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what(), "", "invalid_json");
  }
  auto request = std::make_shared<OpenAIRequest>(parse_openai_request(body, chat, queue_.context_length()));
  const std::string model = queue_.model_id();
  if (!request->model.empty() && request->model != model)
    throw ApiError(404, "the model '" + request->model + "' does not exist; this server serves '" + model + "'",
                   "model", "model_not_found");
  auto served = std::make_shared<ServedRequest>();
  served->endpoint = chat ? "chat" : "completions";
  served->want_token_text = request->logprobs;
  const SamplingParams params = request->params;
  if (chat) {
    served->prompts.push_back([messages = request->messages, params](Engine& e) {
      const ChatTemplate t = model_chat_template(e);
      return add_chat_request(e, render_chat(t, messages), t.format, params);
    });
  } else if (!request->prompt_ids.empty()) {
    for (const auto& ids : request->prompt_ids)
      served->prompts.push_back([ids, params](Engine& e) { return e.add_request_tokens(ids, params); });
  } else {
    for (const auto& text : request->prompts)
      served->prompts.push_back([text, params](Engine& e) { return e.add_request(text, params); });
  }
  if (!queue_.submit(served))
    throw ApiError(429, "the server is busy: " + std::to_string(config_.max_queue) + " requests are in flight (--max-queue)",
                   "", "queue_full", "rate_limit_error");
  auto channel = served->channel;
  // The first event says whether the engine took every prompt.
  std::vector<ChannelEvent> first;
  while (first.empty()) {
    if (stopping_) {
      channel->cancel();
      throw ApiError(503, "the server is shutting down", "", "shutting_down", "server_error");
    }
    first = channel->wait(100ms);
  }
  if (first[0].kind == ChannelEvent::Kind::Refused) throw refusal(first[0], chat);
  if (first[0].kind == ChannelEvent::Kind::Failed) throw ApiError(503, first[0].error, "", "unavailable", "server_error");
  auto response = std::make_shared<OpenAIResponse>(*request, model);
  // Events that came with the acceptance.
  std::string pending;
  for (size_t i = 1; i < first.size(); ++i) pending += response->absorb(first[i]);

  if (!request->stream) {
    while (!response->finished()) {
      if (stopping_) {
        channel->cancel();
        throw ApiError(503, "the server is shutting down", "", "shutting_down", "server_error");
      }
      for (const ChannelEvent& ev : channel->wait(100ms)) {
        if (ev.kind == ChannelEvent::Kind::Failed) throw ApiError(503, ev.error, "", "unavailable", "server_error");
        response->absorb(ev);
      }
    }
    res.set_content(OpenAIResponse::dump(response->body()), "application/json");
    return;
  }
  struct Stream {
    std::shared_ptr<OpenAIRequest> request;
    std::shared_ptr<OpenAIResponse> response;
    std::shared_ptr<RequestChannel> channel;
    std::string pending;
    bool done = false;
  };
  auto st = std::make_shared<Stream>(Stream{request, response, channel, std::move(pending)});
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, st](size_t, httplib::DataSink& sink) {
        std::string out = std::move(st->pending);
        st->pending.clear();
        bool failed = false;
        for (const ChannelEvent& ev : st->channel->wait(out.empty() ? 100ms : 0ms)) {
          if (ev.kind == ChannelEvent::Kind::Failed) {
            out += "data: " + OpenAIResponse::dump(ApiError(503, ev.error, "", "unavailable", "server_error").to_json()) + "\n\n";
            failed = true;
          } else {
            out += st->response->absorb(ev);
          }
        }
        const bool end = failed || st->response->finished() || stopping_;
        if (end) out += st->response->stream_end();
        // A write that fails means the client went away: the request is aborted.
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          st->channel->cancel();
          return false;
        }
        if (end) {
          st->done = true;
          sink.done();
        }
        return true;
      },
      [st](bool) {
        if (!st->done) st->channel->cancel();
      });
}

}  // namespace llmwb::server
