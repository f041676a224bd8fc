#include "request_queue.h"

#include <algorithm>

#include "llmwb/errors.h"

namespace llmwb::server {

namespace {
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

RequestQueue::RequestQueue(size_t max_in_flight) : max_in_flight_(std::max<size_t>(1, max_in_flight)) {}

bool RequestQueue::submit(const std::shared_ptr<ServedRequest>& r) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_ >= max_in_flight_) {
      metrics_.on_rejected();
      return false;
    }
    ++in_flight_;
    r->serial = next_serial_++;
    submitted_.push_back(r);
    RequestRow& row = rows_[r->serial];
    row.serial = r->serial;
    row.endpoint = r->endpoint;
    row.state = "queued";
    while (rows_.size() > max_rows) rows_.erase(rows_.begin());
  }
  cv_.notify_one();
  if (wakeup_) wakeup_();
  return true;
}

std::string RequestQueue::model_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return model_id_;
}

bool RequestQueue::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_;
}

size_t RequestQueue::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

std::vector<RequestRow> RequestQueue::rows() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RequestRow> out;
  for (const auto& [serial, row] : rows_) out.push_back(row);
  return out;
}

int RequestQueue::context_length() const {
  std::lock_guard<std::mutex> lock(mu_);
  return context_length_;
}

void RequestQueue::set_model(const std::string& id, bool ready, int context_length) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    model_id_ = id;
    ready_ = ready;
    context_length_ = context_length;
  }
  metrics_.set_model_name(id);
}

bool RequestQueue::has_submissions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !submitted_.empty();
}

void RequestQueue::wait_for_submissions(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !submitted_.empty(); });
}

// Under mu_: the row of `a` as it stands.
void RequestQueue::update_row(const Active& a, const char* state) {
  auto it = rows_.find(a.request->serial);
  if (it == rows_.end()) return;
  RequestRow& row = it->second;
  if (state) row.state = state;
  row.prompt_tokens = a.prompt_tokens;
  row.completion_tokens = a.completion_tokens;
  if (a.first_token) {
    row.ttft = seconds(a.first - a.request->arrival);
    const double decoding = seconds(a.last - a.first);
    row.tokens_per_second = decoding > 0 && a.completion_tokens > 1 ? double(a.completion_tokens - 1) / decoding : 0;
  }
}

void RequestQueue::release(const std::string& state, const Active& a) {
  std::lock_guard<std::mutex> lock(mu_);
  --in_flight_;
  update_row(a, state.c_str());
}

void RequestQueue::admit(Engine& engine) {
  std::vector<std::shared_ptr<ServedRequest>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(submitted_);
  }
  for (auto& r : batch) {
    auto a = std::make_unique<Active>();
    a->request = r;
    if (r->channel->cancelled()) {
      release("aborted", *a);
      continue;
    }
    ChannelEvent refused{ChannelEvent::Kind::Refused};
    try {
      for (auto& add : r->prompts) a->engine_ids.push_back(add(engine));
    } catch (const Error& e) {
      refused.error = e.what();
      refused.error_where = e.where();
    } catch (const std::exception& e) {
      refused.error = e.what();
    }
    if (!refused.error.empty()) {
      for (uint64_t id : a->engine_ids) {
        engine.abort(id);
        swallow_.insert(id);
      }
      r->channel->push(std::move(refused));
      release("refused", *a);
      continue;
    }
    for (size_t i = 0; i < a->engine_ids.size(); ++i) by_engine_id_[a->engine_ids[i]] = {a.get(), static_cast<int>(i)};
    a->unfinished = a->engine_ids.size();
    r->channel->push(ChannelEvent{ChannelEvent::Kind::Accepted});
    {
      std::lock_guard<std::mutex> lock(mu_);
      update_row(*a, "running");
    }
    active_.push_back(std::move(a));
  }
  // A handler whose client went away cancelled its channel: abort in the engine, which frees
  // the KV blocks now; the final (aborted) output comes from the next step.
  for (auto& a : active_)
    if (!a->aborted && a->request->channel->cancelled()) {
      a->aborted = true;
      for (uint64_t id : a->engine_ids)
        if (by_engine_id_.count(id)) engine.abort(id);
    }
  if (!batch.empty()) metrics_.on_queued_changed(0);
}

std::vector<RequestOutput> RequestQueue::deliver(std::vector<RequestOutput> outputs, const Engine& engine) {
  const auto now = Clock::now();
  std::vector<RequestOutput> others;
  for (RequestOutput& o : outputs) {
    auto it = by_engine_id_.find(o.request_id);
    if (it == by_engine_id_.end()) {
      if (!swallow_.erase(o.request_id)) others.push_back(std::move(o));
      continue;
    }
    Active& a = *it->second.first;
    const int prompt_index = it->second.second;
    size_t total = 0;
    for (const auto& c : o.outputs) total += c.token_ids.size();
    size_t& seen = a.tokens_seen[o.request_id];
    if (total > seen) {
      if (!a.first_token) {
        a.first_token = true;
        a.first = now;
        metrics_.on_first_token(seconds(now - a.request->arrival));
      } else {
        metrics_.on_inter_token(seconds(now - a.last));
      }
      a.last = now;
      a.completion_tokens += total - seen;
      seen = total;
    }
    ChannelEvent ev{ChannelEvent::Kind::Output, prompt_index};
    if (a.request->want_token_text) {
      auto& texted = a.texted[o.request_id];
      texted.resize(o.outputs.size(), 0);
      for (size_t k = 0; k < o.outputs.size(); ++k) {
        const CompletionOutput& c = o.outputs[k];
        for (size_t i = texted[k]; i < c.token_ids.size(); ++i) {
          ev.token_text.try_emplace(c.token_ids[i], engine.token_text(c.token_ids[i]));
          if (i < c.top_logprobs.size())
            for (const TokenLogprob& t : c.top_logprobs[i]) ev.token_text.try_emplace(t.token, engine.token_text(t.token));
        }
        texted[k] = c.token_ids.size();
      }
    }
    const bool finished = o.finished;
    if (finished) {
      a.prompt_tokens = (a.engine_ids.size() == 1 ? 0 : a.prompt_tokens) + o.prompt_token_ids.size();
      metrics_.on_finished(o.prompt_token_ids.size(), total,
                           a.aborted || o.outputs.empty() ? FinishReason::Abort : o.outputs[0].finish_reason);
      by_engine_id_.erase(it);
      --a.unfinished;
    } else if (a.prompt_tokens == 0 && a.engine_ids.size() == 1) {
      a.prompt_tokens = o.prompt_token_ids.size();
    }
    ev.output = std::move(o);
    a.request->channel->push(std::move(ev));
    if (a.unfinished == 0) {
      release(a.aborted ? "aborted" : "finished", a);
      std::erase_if(active_, [&](const std::unique_ptr<Active>& p) { return p.get() == &a; });
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      update_row(a, nullptr);
    }
  }
  size_t queued;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued = submitted_.size();
  }
  metrics_.on_step(engine.telemetry(), queued);
  return others;
}

void RequestQueue::fail_all(Engine* engine, const std::string& why) {
  std::vector<std::shared_ptr<ServedRequest>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(submitted_);
  }
  ChannelEvent failed{ChannelEvent::Kind::Failed};
  failed.error = why;
  for (auto& r : batch) {
    r->channel->push(failed);
    Active a;
    a.request = r;
    release("aborted", a);
  }
  for (auto& a : active_) {
    if (engine)
      for (uint64_t id : a->engine_ids)
        if (by_engine_id_.count(id)) {
          engine->abort(id);
          swallow_.insert(id);
        }
    a->request->channel->push(failed);
    release("aborted", *a);
  }
  active_.clear();
  by_engine_id_.clear();
  if (!engine) swallow_.clear();
}

}  // namespace llmwb::server
