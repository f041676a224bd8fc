// engine.cpp — Engine: ties the scheduler, the block manager, the model and the sampler into
// one step loop (vLLM's LLMEngine.step): schedule -> copy-on-write block copies -> one forward
// pass over the flattened batch -> sample -> detokenize -> outputs and telemetry.
#include "llmwb/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "backend/cpu/cpu_backend.h"
#include "backend/device_model.h"
#include "core/trace_range.h"
#include "kv/block_manager.h"
#include "kv/kv_cache.h"
#include "llmwb/errors.h"
#include "model/llama_model.h"
#include "model/model_describe.h"
#include "model/model_file.h"
#include "quant/weight_quantizer.h"
#include "sample/sampler.h"
#include "sched/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint64_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 4ull << 30;
}

// Longest suffix of `text` that is a proper prefix of some stop string: text that must be held
// back from streaming because the next token may complete a stop string.
size_t stop_holdback(const std::string& text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const auto& s : stops)
    for (size_t k = std::min(s.size() - 1, text.size()); k > hold; --k)
      if (text.compare(text.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  return hold;
}

// Never split a UTF-8 character when holding text back.
size_t utf8_floor(const std::string& s, size_t n) {
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

struct SeqState {
  std::unique_ptr<Sequence> seq;
  Rng rng;
  std::unique_ptr<IncrementalDetokenizer> detok;
  CompletionOutput out;
  size_t emitted = 0;   // bytes of out.text already reported as deltas
  bool done = false;
};

struct Request {
  uint64_t id = 0;
  std::string prompt;
  std::vector<int> prompt_ids;
  SamplingParams params;
  std::vector<std::unique_ptr<SeqState>> seqs;
  bool forked = false;
  Clock::time_point t_added;
  double t_first = -1, t_done = 0;
  bool changed = false;
  bool reported_finished = false;
  std::string error;
};

struct Engine::Impl {
  EngineConfig cfg;
  Clock::time_point t_start = Clock::now();
  std::unique_ptr<ModelFile> file;
  std::unique_ptr<Tokenizer> tok;
  ModelInfo info;
  std::unique_ptr<CpuBackend> backend;
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<KVCache> kv;              // CPU backend's KV pool
  std::unique_ptr<DeviceModel> device;      // --backend cuda: runs the forward pass and owns its KV pool
  // Rows sampled on the device (DeviceSampled); LLMWB_DEVICE_SAMPLING=0 copies every row back and
  // samples on the host instead (the same tokens; for A/B figures).
  bool device_sampling = true;
  uint64_t kv_bytes = 0;
  std::unique_ptr<BlockManager> blocks;
  std::unique_ptr<Scheduler> sched;
  Sampler sampler;
  int max_model_len = 0;
  uint64_t next_request = 1, next_seq = 1, next_arrival = 1;
  std::map<uint64_t, std::unique_ptr<Request>> requests;
  std::map<uint64_t, std::pair<Request*, SeqState*>> by_seq;   // seq_id -> owner
  StepTelemetry telemetry;
  uint64_t step_count = 0;
  uint64_t prefix_hit_tokens = 0, prefix_queried_tokens = 0;
  std::vector<float> logits;
  // Attention capture (heatmap).
  std::optional<AttentionCaptureRequest> capture;
  uint64_t capture_request = 0;
  std::deque<std::pair<int, std::vector<std::vector<float>>>> capture_rows;  // (pos, per head)

  void load(const LoadProgress& progress);
  uint64_t add(const std::vector<int>& ids, const SamplingParams& p, const std::string& text);
  void finish(Request& r, SeqState& s, FinishReason why, const std::string& stop_reason = {});
  void on_token(Request& r, SeqState& s, int token, float prob);
  RequestOutput make_output(Request& r);
  void fill_telemetry(const SchedulerOutput& so, double t_sched, double t_fwd, double t_sample, double t_step);
  int so_prefill_seqs = 0, so_decode_seqs = 0;   // of the step being run
  void record_attention(const AttentionRecord& rec);
};

void Engine::Impl::load(const LoadProgress& progress) {
  auto report = [&](double f, const std::string& what) {
    if (progress && !progress(f, what)) throw Error(cfg.model, "loading cancelled");
  };
  if (cfg.backend != "cpu" && cfg.backend != "cuda")
    throw Error("backend", "'" + cfg.backend + "' is not a backend (cpu or cuda)");
  if (cfg.backend == "cuda" && !cuda_unavailable_reason().empty())
    throw Error("backend", "'cuda' is not available: " + cuda_unavailable_reason());
  if (cfg.tensor_parallel_size != 1 || cfg.pipeline_parallel_size != 1)
    throw Error("tensor_parallel_size", "parallelism across devices is not implemented; both backends run 1 x 1");
  if (cfg.block_size < 1 || cfg.block_size > 1024) throw Error("block_size", "must be in [1, 1024], got " + std::to_string(cfg.block_size));
  if (cfg.max_num_seqs < 1) throw Error("max_num_seqs", "must be >= 1");
  if (cfg.max_num_batched_tokens < 1) throw Error("max_num_batched_tokens", "must be >= 1");
  KVDType kv_dtype;
  if (!kv_dtype_from_name(cfg.kv_dtype, &kv_dtype))
    throw Error("kv_dtype", "'" + cfg.kv_dtype + "' is not a KV cache type (f32, f16 or int8)");

  report(0.0, "reading " + cfg.model);
  file = load_model_file(cfg.model, [&](double f, const std::string& what) {
    return !progress || progress(0.05 + 0.15 * f, what);
  });
  file->config.validate(file->path);
  tok = load_tokenizer_for(*file, cfg.tokenizer);
  LlamaWeights weights = LlamaWeights::bind(*file);
  if (!cfg.quantize.empty()) {
    report(0.2, "quantizing to " + cfg.quantize);
    // Unknown scheme: Error("quantize", ...). On CUDA a k-quant head is Q8_0 (for_backend).
    quantize_weights_in_place(*file, weights, cfg.quantize, cfg.backend);
  }

  // Touch every weight page once, in order, so the model is resident before the first request
  // and the progress bar means something; cancellable between tensors.
  uint64_t total = 0, done = 0;
  for (const auto& t : file->tensors) total += t.nbytes;
  volatile uint8_t sink = 0;
  for (const auto& t : file->tensors) {
    for (uint64_t off = 0; off < t.nbytes; off += 4096) sink = sink + t.data[off];
    done += t.nbytes;
    report(0.2 + 0.7 * (total ? double(done) / double(total) : 1.0), "loading " + t.name);
  }
  (void)sink;

  if (cfg.backend == "cuda") {
    report(0.9, "uploading weights to the GPU");
    device = make_cuda_model(file->config, weights);
    if (const char* e = std::getenv("LLMWB_DEVICE_SAMPLING"); e && std::string(e) == "0") device_sampling = false;
  }
  backend = std::make_unique<CpuBackend>(cfg.threads);
  if (!device) {
    // The 4-bit matrices are repacked for the CPU kernels now, tensor by tensor; each
    // original's mapped pages are dropped once copied, so RSS holds one copy (qrepack.h), and
    // so is a matrix quantized at load: nothing reads its unpacked bytes again (the model
    // multiplies through the backend, which finds the copy by the view's address).
    // A head tied to the embedding is never discarded: the embedding lookup reads its rows.
    auto prepare = [&](const TensorView& t) {
      backend->prepare(t);
      if (cpu::repackable(t.dtype) && t.data != weights.tok_embeddings.data) file->discard_quantized(t.data);
    };
    // Progress (and the chance to cancel) after every layer: a 7B model takes seconds here.
    const size_t n_layers = weights.layers.size();
    for (size_t i = 0; i < n_layers; ++i) {
      report(0.9 + 0.1 * double(i) / double(n_layers + 1),
             "preparing weights for the CPU kernels (layer " + std::to_string(i + 1) + "/" +
                 std::to_string(n_layers) + ")");
      const LlamaLayerWeights& l = weights.layers[i];
      for (const TensorView* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3}) prepare(*t);
    }
    report(0.9 + 0.1 * double(n_layers) / double(n_layers + 1), "preparing the output head for the CPU kernels");
    prepare(weights.output);
  }
  model = std::make_unique<LlamaModel>(file->config, std::move(weights), *backend);
  const ModelConfig& c = file->config;
  // An explicit max_model_len may exceed the length the model was trained for (as llama.cpp's
  // -c allows): RoPE is defined at every position, though quality past it is not promised.
  if (cfg.max_model_len < 0) throw Error("max_model_len", "must be >= 0");
  max_model_len = cfg.max_model_len > 0 ? cfg.max_model_len : c.max_seq_len;

  // KV pool: the budget given, else enough for max_num_seqs full contexts, capped at a share
  // of the memory available now. Pages are only touched as blocks fill.
  const uint64_t per_block = KVCache::bytes_per_block(c.n_layers, cfg.block_size, c.n_kv_heads, c.head_dim, kv_dtype);
  uint64_t budget = cfg.kv_memory_bytes;
  if (budget == 0) {
    const uint64_t want = per_block * uint64_t(cfg.max_num_seqs) * ((max_model_len + cfg.block_size - 1) / cfg.block_size);
    const uint64_t avail = device ? device->free_memory_bytes() : available_memory_bytes();
    const uint64_t cap = static_cast<uint64_t>(cfg.kv_memory_fraction * double(avail));
    budget = std::min(want, std::max<uint64_t>(cap, per_block));
  }
  const int num_blocks = static_cast<int>(std::min<uint64_t>(budget / per_block, 1u << 30));
  if (num_blocks < 1)
    throw Error("kv_memory", "budget of " + std::to_string(budget) + " bytes holds no KV block (one block needs " +
                                 std::to_string(per_block) + " bytes)");
  if (device)
    device->allocate_kv(num_blocks, cfg.block_size, kv_dtype);
  else
    kv = std::make_unique<KVCache>(c.n_layers, num_blocks, cfg.block_size, c.n_kv_heads, c.head_dim, kv_dtype);
  kv_bytes = per_block * uint64_t(num_blocks);
  blocks = std::make_unique<BlockManager>(num_blocks, cfg.block_size, cfg.enable_prefix_caching);
  SchedulerConfig sc;
  sc.max_num_seqs = cfg.max_num_seqs;
  sc.max_num_batched_tokens = cfg.max_num_batched_tokens;
  sched = std::make_unique<Scheduler>(sc, *blocks);

  info = describe_model(*file, tok.get());
  info.context_length = max_model_len;
  info.backend = device ? device->describe() : backend->name();
  telemetry.block_size = cfg.block_size;
  telemetry.blocks_total = num_blocks;
  telemetry.blocks_free = num_blocks;
  telemetry.kv_bytes_total = kv_bytes;
  telemetry.kv_dtype = kv_dtype_name(kv_dtype);
  report(1.0, "ready");
}

uint64_t Engine::Impl::add(const std::vector<int>& ids_in, const SamplingParams& p, const std::string& text) {
  p.validate();
  std::vector<int> ids = ids_in;
  if (ids.empty()) ids.push_back(tok->bos_id());
  const int vocab = file->config.vocab_size;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw Error("prompt", "token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                " is outside the vocabulary (0.." + std::to_string(vocab - 1) + ")");
  const int n_prompt = static_cast<int>(ids.size());
  if (n_prompt >= max_model_len)
    throw Error("prompt", "has " + std::to_string(n_prompt) + " tokens but the context length is " +
                              std::to_string(max_model_len) + " (room is needed for at least one generated token)");
  const int max_total = std::min(n_prompt + p.max_tokens, max_model_len);
  const int need_blocks = (max_total + cfg.block_size - 1) / cfg.block_size;
  if (need_blocks > blocks->num_blocks())
    throw Error("kv cache", "the request needs " + std::to_string(need_blocks) + " blocks of " +
                                std::to_string(cfg.block_size) + " tokens (" + std::to_string(max_total) +
                                " tokens) but the whole pool holds " + std::to_string(blocks->num_blocks()) +
                                " blocks; give more --kv-memory or fewer --max-tokens");
  auto req = std::make_unique<Request>();
  req->id = next_request++;
  req->prompt = text;
  req->prompt_ids = ids;
  req->params = p;
  req->t_added = Clock::now();
  const uint64_t base_seed = p.seed ? *p.seed : std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  // Only sample 0 is scheduled now; the others fork from it once its prompt is computed, so
  // they share the prompt's KV blocks.
  auto st = std::make_unique<SeqState>();
  st->seq = std::make_unique<Sequence>();
  Sequence& s = *st->seq;
  s.seq_id = next_seq++;
  s.request_id = req->id;
  s.arrival = next_arrival++;
  s.tokens = ids;
  s.num_prompt_tokens = n_prompt;
  s.max_total_tokens = max_total;
  st->rng.reseed(base_seed);
  st->detok = std::make_unique<IncrementalDetokenizer>(*tok, ids.back());
  by_seq[s.seq_id] = {req.get(), st.get()};
  sched->add(&s);
  req->seqs.push_back(std::move(st));
  const uint64_t id = req->id;
  requests[id] = std::move(req);
  return id;
}

void Engine::Impl::finish(Request& r, SeqState& s, FinishReason why, const std::string& stop_reason) {
  if (s.done) return;
  s.done = true;
  s.out.finish_reason = why;
  s.out.stop_reason = stop_reason;
  if (why != FinishReason::Stop || stop_reason.empty() || stop_reason == "eos") s.out.text += s.detok->flush();
  sched->remove(s.seq.get());
  s.seq->status = SeqStatus::Finished;
  r.changed = true;
  bool all = true;
  for (auto& x : r.seqs) all = all && x->done;
  if (all && r.seqs.size() == static_cast<size_t>(r.params.n)) r.t_done = seconds_since(r.t_added);
}

void Engine::Impl::on_token(Request& r, SeqState& s, int token, float prob) {
  Sequence& q = *s.seq;
  q.tokens.push_back(token);
  s.out.token_ids.push_back(token);
  s.out.token_probs.push_back(prob);
  r.changed = true;
  if (r.t_first < 0) r.t_first = seconds_since(r.t_added);
  const SamplingParams& p = r.params;
  if (!p.ignore_eos && tok->is_eog(token)) return finish(r, s, FinishReason::Stop, "eos");
  const size_t before = s.out.text.size();
  s.out.text += s.detok->push(token);
  if (!p.stop.empty()) {
    size_t max_stop = 0;
    for (const auto& st : p.stop) max_stop = std::max(max_stop, st.size());
    const size_t from = before >= max_stop ? before - max_stop + 1 : 0;
    size_t best = std::string::npos;
    std::string which;
    for (const auto& st : p.stop) {
      const size_t at = s.out.text.find(st, from);
      if (at != std::string::npos && at < best) best = at, which = st;
    }
    if (best != std::string::npos) {
      s.out.text.resize(best);
      return finish(r, s, FinishReason::Stop, which);
    }
  }
  if (q.num_tokens() >= q.max_total_tokens) return finish(r, s, FinishReason::Length);
}

RequestOutput Engine::Impl::make_output(Request& r) {
  RequestOutput o;
  o.request_id = r.id;
  o.prompt = r.prompt;
  o.prompt_token_ids = r.prompt_ids;
  o.error = r.error;
  o.time_to_first_token = std::max(0.0, r.t_first);
  bool all_done = r.seqs.size() == static_cast<size_t>(r.params.n) || !r.error.empty();
  for (auto& sp : r.seqs) {
    SeqState& s = *sp;
    CompletionOutput c = s.out;
    // Stream everything except text that might still turn into a stop string.
    size_t upto = s.done ? s.out.text.size()
                         : utf8_floor(s.out.text, s.out.text.size() - stop_holdback(s.out.text, r.params.stop));
    if (upto < s.emitted) upto = s.emitted;
    c.delta = s.out.text.substr(s.emitted, upto - s.emitted);
    s.emitted = upto;
    if (!s.done) c.text = s.out.text.substr(0, upto);
    all_done = all_done && s.done;
    o.num_cached_prompt_tokens = std::max(o.num_cached_prompt_tokens, s.seq->num_cached_tokens);
    o.outputs.push_back(std::move(c));
  }
  o.finished = all_done;
  o.total_time = all_done ? r.t_done : seconds_since(r.t_added);
  return o;
}

void Engine::Impl::record_attention(const AttentionRecord& rec) {
  const int nq = static_cast<int>(rec.rows.size()) / std::max(1, rec.n_heads);
  for (int qi = 0; qi < nq; ++qi) {
    std::vector<std::vector<float>> heads(rec.rows.begin() + qi * rec.n_heads, rec.rows.begin() + (qi + 1) * rec.n_heads);
    capture_rows.emplace_back(rec.start_pos + qi, std::move(heads));
  }
  while (static_cast<int>(capture_rows.size()) > capture->max_queries) capture_rows.pop_front();
}

void Engine::Impl::fill_telemetry(const SchedulerOutput& so, double t_sched, double t_fwd, double t_sample,
                                  double t_step) {
  StepTelemetry& t = telemetry;
  t.step = step_count;
  t.time = seconds_since(t_start);
  t.step_seconds = t_step;
  t.schedule_seconds = t_sched;
  t.forward_seconds = t_fwd;
  t.sample_seconds = t_sample;
  t.num_prefill_tokens = so.num_prefill_tokens;
  t.num_decode_tokens = so.num_decode_tokens;
  // so.scheduled's sequences may be gone by now (finished requests are erased): use the counts
  // taken when the step was scheduled.
  t.num_prefill_seqs = so_prefill_seqs;
  t.num_decode_seqs = so_decode_seqs;
  t.num_running = sched->num_running();
  t.num_waiting = sched->num_waiting();
  t.num_preempted = 0;
  for (const Sequence* s : sched->waiting()) t.num_preempted += s->status == SeqStatus::Preempted;
  t.preemptions_total = sched->preemptions_total();
  t.prefix_cache_hit_tokens_total = prefix_hit_tokens;
  t.prefix_cache_queried_tokens_total = prefix_queried_tokens;
  std::vector<const Sequence*> live;
  t.sequences.clear();
  for (auto& [id, r] : requests)
    for (auto& s : r->seqs) {
      if (s->done) continue;
      const Sequence& q = *s->seq;
      live.push_back(&q);
      SequenceTelemetry st;
      st.request_id = q.request_id;
      st.sample_index = q.sample_index;
      st.num_tokens = q.num_tokens();
      st.num_computed = q.num_computed_tokens;
      st.num_prompt_tokens = q.num_prompt_tokens;
      st.block_table = q.block_table;
      st.state = q.status == SeqStatus::Running ? "running" : q.status == SeqStatus::Preempted ? "preempted" : "waiting";
      t.sequences.push_back(std::move(st));
    }
  blocks->fill_telemetry(live, t);
  t.kv_bytes_total = kv_bytes;
  if (capture && !capture_rows.empty()) {
    auto snap = std::make_shared<AttentionSnapshot>();
    snap->request_id = capture_request;
    snap->layer = capture->layer;
    snap->n_heads = file->config.n_heads;
    snap->context_len = capture_rows.back().first + 1;
    auto it = requests.find(capture_request);
    if (it != requests.end()) {
      const auto& toks = it->second->seqs[0]->seq->tokens;
      snap->context_tokens.assign(toks.begin(), toks.begin() + std::min<size_t>(toks.size(), snap->context_len));
    }
    const size_t L = static_cast<size_t>(snap->context_len);
    snap->weights.assign(capture_rows.size() * snap->n_heads * L, 0.f);
    size_t qi = 0;
    for (auto& [pos, heads] : capture_rows) {
      snap->query_positions.push_back(pos);
      for (int h = 0; h < snap->n_heads; ++h) {
        const auto& row = heads[static_cast<size_t>(h)];
        std::copy(row.begin(), row.begin() + std::min(row.size(), L), snap->weights.begin() + (qi * snap->n_heads + h) * L);
      }
      ++qi;
    }
    t.attention = snap;
  } else {
    t.attention.reset();
  }
}

Engine::Engine(const EngineConfig& config, const LoadProgress& progress) : impl_(std::make_unique<Impl>()) {
  impl_->cfg = config;
  impl_->load(progress);
}

Engine::~Engine() = default;

uint64_t Engine::add_request(const std::string& prompt, const SamplingParams& params, bool parse_special) {
  return impl_->add(encode(prompt, true, parse_special), params, prompt);
}

uint64_t Engine::add_request_tokens(const std::vector<int>& prompt_ids, const SamplingParams& params,
                                    const std::string& prompt_text) {
  return impl_->add(prompt_ids, params, prompt_text);
}

void Engine::abort(uint64_t request_id) {
  auto it = impl_->requests.find(request_id);
  if (it == impl_->requests.end()) return;
  Request& r = *it->second;
  for (auto& s : r.seqs) impl_->finish(r, *s, FinishReason::Abort);
  // Samples not yet forked will never exist: the request is complete as it stands.
  r.params.n = static_cast<int>(r.seqs.size());
  r.t_done = seconds_since(r.t_added);
}

bool Engine::has_unfinished() const {
  for (auto& [id, r] : impl_->requests)
    if (!r->reported_finished) return true;
  return false;
}

std::vector<RequestOutput> Engine::step() {
  Impl& m = *impl_;
  const auto t0 = Clock::now();
  const std::vector<Sequence*> was_waiting(m.sched->waiting().begin(), m.sched->waiting().end());
  TraceRange step_range("step");
  SchedulerOutput so = [&] {
    TraceRange r("schedule");
    return m.sched->schedule();
  }();
  const double t_sched = seconds_since(t0);
  m.so_prefill_seqs = m.so_decode_seqs = 0;
  for (const ScheduledSeq& ss : so.scheduled) {
    const bool decode = ss.num_new_tokens == 1 && ss.seq->num_tokens() > ss.seq->num_prompt_tokens;
    (decode ? m.so_decode_seqs : m.so_prefill_seqs)++;
  }
  // Prefix-cache statistics: prompt tokens of newly admitted sequences, and how many of them
  // the cache supplied.
  for (const ScheduledSeq& ss : so.scheduled)
    if (std::find(was_waiting.begin(), was_waiting.end(), ss.seq) != was_waiting.end()) {
      m.prefix_queried_tokens += static_cast<uint64_t>(ss.seq->num_tokens());
      m.prefix_hit_tokens += static_cast<uint64_t>(ss.seq->num_cached_tokens);
    }
  double t_fwd = 0, t_sample = 0;
  if (!so.empty()) {
    if (m.device) {
      TraceRange r("copy blocks");
      std::vector<std::pair<int, int>> pairs;
      for (const BlockCopy& c : so.copies) pairs.emplace_back(c.src, c.dst);
      m.device->copy_blocks(pairs);
    } else {
      for (const BlockCopy& c : so.copies) m.kv->copy_block(c.src, c.dst);
    }
    ForwardBatch batch;
    for (const ScheduledSeq& ss : so.scheduled) {
      Sequence& q = *ss.seq;
      ForwardSeq fs;
      fs.first = static_cast<int>(batch.tokens.size());
      fs.n_tokens = ss.num_new_tokens;
      fs.start_pos = q.num_computed_tokens;
      fs.block_table = &q.block_table;
      if (q.num_computed_tokens + ss.num_new_tokens == q.num_tokens()) fs.logits_row = batch.num_logit_rows++;
      if (m.capture && q.request_id == m.capture_request && q.sample_index == 0) fs.capture_attention = true;
      batch.tokens.insert(batch.tokens.end(), q.tokens.begin() + q.num_computed_tokens,
                          q.tokens.begin() + q.num_computed_tokens + ss.num_new_tokens);
      batch.seqs.push_back(fs);
    }
    const int vocab = m.file->config.vocab_size;
    m.logits.resize(static_cast<size_t>(batch.num_logit_rows) * vocab);
    AttentionRecord rec;
    // Rows the device can sample as the host would (no repetition penalty, not a parallel-sampling
    // prompt about to fork) are sampled there: one int and one float come back, not a row of
    // logits. A sampled row takes its uniform from the sequence's Rng now, as the host sampler
    // would take it below.
    DeviceSampled dev;
    if (m.device && m.device_sampling) {
      dev.rows.assign(static_cast<size_t>(batch.num_logit_rows), 0);
      dev.params.assign(static_cast<size_t>(batch.num_logit_rows), {});
      for (size_t i = 0; i < so.scheduled.size(); ++i) {
        const int row = batch.seqs[i].logits_row;
        if (row < 0) continue;
        const auto [req, st] = m.by_seq.at(so.scheduled[i].seq->seq_id);
        const SamplingParams& p = req->params;
        const bool forks = p.n > 1 && !req->forked && st->seq->sample_index == 0;
        if (p.repetition_penalty != 1.0f || forks || st->done) continue;
        DeviceRowSampling& d = dev.params[static_cast<size_t>(row)];
        d.temperature = p.temperature;
        d.top_k = p.top_k;
        d.top_p = p.top_p;
        d.min_p = p.min_p;
        if (p.temperature > 0.f) d.u = st->rng.uniform();
        dev.rows[static_cast<size_t>(row)] = 1;
      }
    }
    const auto t1 = Clock::now();
    std::optional<TraceRange> fwd_range(std::in_place, "forward");
    if (m.device)
      m.device->forward(batch, m.logits.data(), m.capture ? m.capture->layer : -1, m.capture ? &rec : nullptr,
                        dev.rows.empty() ? nullptr : &dev);
    else
      m.model->forward(batch, *m.kv, m.logits.data(), m.capture ? m.capture->layer : -1, m.capture ? &rec : nullptr);
    t_fwd = seconds_since(t1);
    fwd_range.reset();
    if (m.capture && !rec.rows.empty()) m.record_attention(rec);

    const auto t2 = Clock::now();
    TraceRange sample_range("sample");
    // Advance every scheduled sequence first (the forward wrote their K/V) ...
    std::vector<std::pair<Sequence*, int>> to_sample;
    for (size_t i = 0; i < so.scheduled.size(); ++i) {
      Sequence& q = *so.scheduled[i].seq;
      q.num_computed_tokens += so.scheduled[i].num_new_tokens;
      m.blocks->commit_computed(q);
      if (batch.seqs[i].logits_row >= 0) to_sample.emplace_back(&q, batch.seqs[i].logits_row);
    }
    // ... then sample the ones whose every token is computed.
    std::vector<float> row_copy;
    for (auto [qp, row] : to_sample) {
      auto [req, st] = m.by_seq.at(qp->seq_id);
      if (st->done) continue;
      float* lrow = m.logits.data() + static_cast<size_t>(row) * vocab;
      if (req->params.n > 1 && !req->forked && st->seq->sample_index == 0) {
        // Parallel sampling: the prompt is computed once; samples 1..n-1 fork its blocks now and
        // draw their first token from the same logits.
        req->forked = true;
        for (int k = 1; k < req->params.n; ++k) {
          auto child = std::make_unique<SeqState>();
          child->seq = std::make_unique<Sequence>(*st->seq);
          Sequence& c = *child->seq;
          c.seq_id = m.next_seq++;
          c.sample_index = k;
          c.block_table.clear();
          m.blocks->fork(*st->seq, c);
          c.status = SeqStatus::Running;
          const uint64_t seed = req->params.seed ? *req->params.seed : st->rng.next();
          child->rng.reseed(seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(k));
          child->detok = std::make_unique<IncrementalDetokenizer>(*m.tok, c.tokens.back());
          child->out.index = k;
          m.by_seq[c.seq_id] = {req, child.get()};
          m.sched->add_forked(&c);
          row_copy.assign(lrow, lrow + vocab);
          SampleResult r = m.sampler.sample(row_copy.data(), vocab, req->params, child->rng, c.tokens);
          SeqState* cs = child.get();
          req->seqs.push_back(std::move(child));
          m.on_token(*req, *cs, r.token, r.prob);
        }
      }
      const bool on_device = !dev.token.empty() && dev.rows[static_cast<size_t>(row)];
      const SampleResult r = on_device ? SampleResult{dev.token[static_cast<size_t>(row)],
                                                      dev.prob[static_cast<size_t>(row)]}
                                       : m.sampler.sample(lrow, vocab, req->params, st->rng, st->seq->tokens);
      m.on_token(*req, *st, r.token, r.prob);
    }
    t_sample = seconds_since(t2);
  }
  ++m.step_count;
  std::vector<RequestOutput> outs;
  for (auto it = m.requests.begin(); it != m.requests.end();) {
    Request& r = *it->second;
    if (r.changed) {
      r.changed = false;
      RequestOutput o = m.make_output(r);
      if (o.finished) r.reported_finished = true;
      outs.push_back(std::move(o));
    }
    if (r.reported_finished && m.capture_request != r.id) {
      for (auto& s : r.seqs) m.by_seq.erase(s->seq->seq_id);
      it = m.requests.erase(it);
    } else {
      ++it;
    }
  }
  // The heatmap follows the newest live request.
  if (m.capture) {
    uint64_t newest = 0;
    for (auto& [id, r] : m.requests)
      if (!r->reported_finished) newest = id;
    if (newest && newest != m.capture_request) {
      m.capture_request = newest;
      m.capture_rows.clear();
    }
  }
  m.fill_telemetry(so, t_sched, t_fwd, t_sample, seconds_since(t0));
  return outs;
}

const StepTelemetry& Engine::telemetry() const { return impl_->telemetry; }
const ModelInfo& Engine::model_info() const { return impl_->info; }
const EngineConfig& Engine::config() const { return impl_->cfg; }

std::vector<int> Engine::encode(const std::string& text, bool add_bos, bool parse_special) const {
  std::vector<int> ids;
  if (add_bos) ids.push_back(impl_->tok->bos_id());
  const std::vector<int> body = parse_special ? impl_->tok->encode_with_special(text) : impl_->tok->encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

std::string Engine::decode(const std::vector<int>& ids) const { return impl_->tok->decode(ids); }
std::string Engine::token_text(int id) const { return impl_->tok->display(id); }
int Engine::bos_id() const { return impl_->tok->bos_id(); }
int Engine::eos_id() const { return impl_->tok->eos_id(); }

void Engine::set_attention_capture(std::optional<AttentionCaptureRequest> req) {
  if (req) {
    if (req->layer < 0 || req->layer >= impl_->file->config.n_layers)
      throw Error("attention capture", "layer " + std::to_string(req->layer) + " does not exist (the model has " +
                                           std::to_string(impl_->file->config.n_layers) + " layers)");
    if (req->max_queries < 1) req->max_queries = 1;
  }
  const bool layer_changed = !req || !impl_->capture || impl_->capture->layer != req->layer;
  impl_->capture = req;
  if (layer_changed) impl_->capture_rows.clear();
}

}  // namespace llmwb
