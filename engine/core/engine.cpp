// engine.cpp — Engine: the step loop (vLLM's LLMEngine.step). Each step: the scheduler picks
// the batch -> the runner copies blocks for copy-on-write and runs one forward pass over the
// batch, built here once -> sequences advance -> the samples of n > 1 requests fork -> tokens
// are sampled -> the output processor turns them into deltas. Nothing here names a device: the
// runner says what it can do.
#include "llmwb/engine.h"

#include <algorithm>
#include <random>
#include <tuple>

#include "core/engine_impl.h"
#include "core/trace_range.h"
#include "llmwb/errors.h"

namespace llmwb {

uint64_t Engine::Impl::add(const std::vector<int>& ids_in, const SamplingParams& p, const std::string& text) {
  p.validate();
  std::vector<int> ids = ids_in;
  // An empty prompt starts from BOS or, in a vocabulary without one (Qwen), from EOS, the
  // document separator its pretraining put between texts.
  if (ids.empty()) ids.push_back(tok->bos_id() >= 0 ? tok->bos_id() : tok->eos_id());
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
  // The request fans out into its n samples now (vLLM's parent request). Only sample 0 is
  // scheduled; the others wait and fork from it once its prompt is computed
  // (fork_parallel_samples), so that they share the prompt's KV blocks.
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
  st->draft_length = DraftLength(cfg.speculative.num_speculative_tokens);
  st->out.seed = base_seed;
  st->detok = std::make_unique<IncrementalDetokenizer>(*tok, ids.back());
  by_seq[s.seq_id] = {req.get(), st.get()};
  sched->add(&s);
  SeqState& first = *st;
  req->seqs.push_back(std::move(st));
  for (int k = 1; k < p.n; ++k) {
    auto child = std::make_unique<SeqState>();
    child->pending = true;
    child->seq = std::make_unique<Sequence>(s);
    child->seq->seq_id = next_seq++;
    child->seq->sample_index = k;
    // Sample k's stream: the request's seed, else a draw from sample 0's before it samples.
    const uint64_t seed = p.seed ? *p.seed : first.rng.next();
    child->draft_length = DraftLength(cfg.speculative.num_speculative_tokens);
    child->out.seed = seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(k);
    child->rng.reseed(child->out.seed);
    child->detok = std::make_unique<IncrementalDetokenizer>(*tok, ids.back());
    child->out.index = k;
    by_seq[child->seq->seq_id] = {req.get(), child.get()};
    req->seqs.push_back(std::move(child));
  }
  const uint64_t id = req->id;
  requests[id] = std::move(req);
  return id;
}

void Engine::Impl::finish(Request& r, SeqState& s, FinishReason why, const std::string& stop_reason) {
  if (s.done) return;
  s.done = true;
  output->close(s, why, stop_reason);
  sched->remove(s.seq.get());
  if (proposer) proposer->forget(s.seq->seq_id);
  s.seq->status = SeqStatus::Finished;
  r.changed = true;
  bool all = true;
  for (auto& x : r.seqs) all = all && x->done;
  if (all && r.seqs.size() == static_cast<size_t>(r.params.n)) r.t_done = seconds_since(r.t_added);
}

// With SamplingParams::logprobs, the sampled token's log probability and the top ones, from the
// row the sampler left penalized (rows with logprobs are never sampled by the runner).
void Engine::Impl::record_logprobs(Request& r, SeqState& s, const float* row, int token) {
  if (r.params.logprobs < 0) return;
  std::vector<TokenLogprob> top;
  s.out.token_logprobs.push_back(sampler.logprobs(row, file->config.vocab_size, token, r.params.logprobs, top));
  s.out.top_logprobs.push_back(std::move(top));
}

// Speculative decoding: every running sequence that decodes asks for the draft slots its
// DraftLength wants (none where, by what passes cost here, spec_cost, in a step of as many
// decoding sequences, no length pays), never more than the tokens it may still emit less the
// target's own.
void Engine::Impl::plan_speculation() {
  if (!proposer) return;
  std::vector<std::tuple<Sequence*, SeqState*, bool>> decoding;
  int sequences = 0;
  for (Sequence* q : sched->running()) {
    q->num_spec_tokens = 0;
    const auto [req, st] = by_seq.at(q->seq_id);
    if (st->done || q->paused || q->num_uncomputed() != 1) continue;
    ++sequences;
    // A request that asks for log probabilities decodes plainly: they come from the sampler's row.
    if (q->num_tokens() <= q->num_prompt_tokens || req->forks_at(*st) || req->params.logprobs >= 0) continue;
    // A seeded sampling request must repeat: how many uniforms a round draws depends on its k,
    // so whether it drafts must not depend on timings: it goes by its rounds alone. Greedy
    // output and unseeded sampling do not depend on k's history, and weigh the costs.
    decoding.emplace_back(q, st, !(req->params.seed && req->params.temperature > 0));
  }
  for (auto [q, st, by_cost] : decoding) {
    const int room = q->max_total_tokens - q->num_tokens() - 1;
    if (room > 0) q->num_spec_tokens = std::min(st->draft_length.next(by_cost ? &spec_cost : nullptr, sequences), room);
  }
}

void Engine::Impl::learn_spec_cost(const SchedulerOutput& so, const ForwardBatch& batch, const StepTimes& times) {
  if (!proposer || so.scheduled.empty()) return;
  for (const ScheduledSeq& ss : so.scheduled)
    if (!ss.decode) return;   // a prompt chunk's tokens cost another rate (a GEMM, not a GEMV)
  spec_cost.add_step(static_cast<int>(batch.tokens.size()), times.forward, draft_passes, times.draft);
}

void Engine::Impl::on_token(Request& r, SeqState& s, int token, float prob, bool from_draft) {
  if (auto stop = output->append(r, s, token, prob, from_draft)) {
    finish(r, s, stop->reason, stop->stop_reason);
    return;
  }
  // step_request: the one token it let through is here; hold the request again.
  if (s.pause_at >= 0 && static_cast<int>(s.out.token_ids.size()) >= s.pause_at) {
    s.pause_at = -1;
    s.seq->paused = true;
    r.paused = true;
    r.changed = true;
  }
}

void Engine::Impl::set_paused(Request& r, bool paused, bool one_token) {
  r.paused = paused;
  r.changed = true;
  for (auto& s : r.seqs) {
    s->seq->paused = paused;
    s->pause_at = one_token ? static_cast<int>(s->out.token_ids.size()) + 1 : -1;
  }
}

// The scheduler's batch, with the prefix-cache statistics of the sequences it admitted.
SchedulerOutput Engine::Impl::schedule() {
  TraceRange r("schedule");
  SchedulerOutput so = sched->schedule();
  for (Sequence* q : so.preempted) {   // a preempted sequence's draft state is void
    q->num_spec_tokens = 0;
    q->spec_tokens.clear();
    if (proposer) proposer->forget(q->seq_id);
  }
  so_prefill_seqs = so_decode_seqs = 0;
  for (const ScheduledSeq& ss : so.scheduled) {
    (ss.decode ? so_decode_seqs : so_prefill_seqs)++;
    if (ss.admitted) {
      prefix_queried_tokens += static_cast<uint64_t>(ss.seq->num_tokens());
      prefix_hit_tokens += static_cast<uint64_t>(ss.seq->num_cached_tokens);
    }
  }
  return so;
}

// The proposer guesses into the slots the scheduler reserved, all sequences in one call.
void Engine::Impl::propose(const SchedulerOutput& so) {
  if (!proposer) return;
  draft_passes = 0;
  std::vector<DraftSlot> slots;
  std::vector<SeqState*> owners;
  for (const ScheduledSeq& ss : so.scheduled) {
    ss.seq->spec_tokens.clear();
    if (ss.num_spec_slots == 0) continue;
    const auto [req, st] = by_seq.at(ss.seq->seq_id);
    slots.push_back(DraftSlot{ss.seq, ss.num_spec_slots, &req->params, &st->rng, {}, {}});
    owners.push_back(st);
  }
  if (slots.empty()) return;
  TraceRange r("draft");
  proposer->propose(slots);
  draft_passes = std::max(1, proposer->last_passes());
  for (size_t i = 0; i < slots.size(); ++i) {
    owners[i]->seq->spec_tokens = std::move(slots[i].tokens);
    owners[i]->draft_q = std::move(slots[i].q);
    owners[i]->draft_doubted = slots[i].doubted;
  }
}

// The step's flattened batch: every scheduled sequence's new tokens back to back, with its
// position, block table, decode flag and logits row (only for a sequence whose every token is
// then computed). A speculating sequence adds its guesses and asks for logits at every position
// (all_logits): the target scores k guesses and its own next token in the one pass.
ForwardBatch Engine::Impl::build_batch(const SchedulerOutput& so) const {
  ForwardBatch batch;
  batch.step = step_count + 1;   // unique per step: the runner derives slots and tiles once
  for (const ScheduledSeq& ss : so.scheduled) {
    const Sequence& q = *ss.seq;
    const int guesses = static_cast<int>(q.spec_tokens.size());
    ForwardSeq fs;
    fs.first = static_cast<int>(batch.tokens.size());
    fs.n_tokens = ss.num_new_tokens + guesses;
    fs.start_pos = q.num_computed_tokens;
    fs.block_table = &q.block_table;
    fs.decode = ss.decode && guesses == 0;
    if (q.num_computed_tokens + ss.num_new_tokens == q.num_tokens()) {
      fs.logits_row = batch.num_logit_rows;
      fs.all_logits = guesses > 0;
      batch.num_logit_rows += guesses > 0 ? fs.n_tokens : 1;
    }
    if (capture && q.request_id == capture_request && q.sample_index == 0) fs.capture_attention = true;
    batch.tokens.insert(batch.tokens.end(), q.tokens.begin() + q.num_computed_tokens,
                        q.tokens.begin() + q.num_computed_tokens + ss.num_new_tokens);
    batch.tokens.insert(batch.tokens.end(), q.spec_tokens.begin(), q.spec_tokens.end());
    batch.seqs.push_back(fs);
  }
  return batch;
}

// Rows the runner can sample as the host would (no repetition penalty, no presence or frequency
// penalty, no log probabilities asked for, not a parallel-sampling prompt about to fork) are sampled there: one int and one float come back, not a row of
// logits. A sampled row takes its uniform from the sequence's Rng now, as the host sampler
// would take it in sample().
DeviceSampled Engine::Impl::rows_for_the_runner_to_sample(const SchedulerOutput& so, const ForwardBatch& batch) {
  DeviceSampled dev;
  if (!caps.samples_rows || !cfg.tuning.device_sampling) return dev;
  dev.rows.assign(static_cast<size_t>(batch.num_logit_rows), 0);
  dev.params.assign(static_cast<size_t>(batch.num_logit_rows), {});
  for (size_t i = 0; i < so.scheduled.size(); ++i) {
    const int row = batch.seqs[i].logits_row;
    if (row < 0) continue;
    const auto [req, st] = by_seq.at(so.scheduled[i].seq->seq_id);
    const SamplingParams& p = req->params;
    if ((p.repetition_penalty != 1.0f && !caps.samples_with_penalty) || req->forks_at(*st) || st->done ||
        !st->seq->spec_tokens.empty())
      continue;
    if (p.logprobs >= 0 || p.presence_penalty != 0.f || p.frequency_penalty != 0.f) continue;   // host only
    RowSampling& d = dev.params[static_cast<size_t>(row)];
    d.temperature = p.temperature;
    d.top_k = p.top_k;
    d.top_p = p.top_p;
    d.min_p = p.min_p;
    if (p.temperature > 0.f) d.u = st->rng.uniform();
    dev.rows[static_cast<size_t>(row)] = 1;
  }
  return dev;
}

void Engine::Impl::execute(const ForwardBatch& batch, DeviceSampled& dev) {
  TraceRange r("forward");
  logits.resize(static_cast<size_t>(batch.num_logit_rows) * file->config.vocab_size);
  AttentionRecord rec;
  runner->execute(batch, logits.data(), capture ? capture->layer : -1, capture ? &rec : nullptr,
                  dev.rows.empty() ? nullptr : &dev);
  if (capture && !rec.rows.empty()) record_attention(rec);
}

// The forward pass wrote K/V of every scheduled token: full blocks enter the prefix cache.
void Engine::Impl::advance(const SchedulerOutput& so) {
  for (const ScheduledSeq& ss : so.scheduled) {
    ss.seq->num_computed_tokens += ss.num_new_tokens;
    blocks->commit_computed(*ss.seq);
  }
}

// Parallel sampling: the prompt is computed once; samples 1..n-1, waiting since the request was
// added, fork its blocks now and draw their first token from the same logits.
void Engine::Impl::fork_parallel_samples(const SchedulerOutput& so, const ForwardBatch& batch) {
  const int vocab = file->config.vocab_size;
  std::vector<float> row_copy;
  for (size_t i = 0; i < so.scheduled.size(); ++i) {
    const int row = batch.seqs[i].logits_row;
    if (row < 0) continue;
    auto [req, st] = by_seq.at(so.scheduled[i].seq->seq_id);
    if (st->done || !req->forks_at(*st)) continue;
    const float* lrow = logits.data() + static_cast<size_t>(row) * vocab;
    req->forked = true;
    for (auto& child : req->seqs) {
      if (!child->pending || child->done) continue;
      child->pending = false;
      Sequence& c = *child->seq;
      const uint64_t id = c.seq_id;
      const int k = c.sample_index;
      c = *st->seq;
      c.seq_id = id;
      c.sample_index = k;
      c.block_table.clear();
      blocks->fork(*st->seq, c);
      c.status = SeqStatus::Running;
      sched->add_forked(&c);
      row_copy.assign(lrow, lrow + vocab);
      const SampleResult r =
          sampler.sample(row_copy.data(), vocab, req->params, child->rng, c.tokens, static_cast<size_t>(c.num_prompt_tokens));
      record_logprobs(*req, *child, row_copy.data(), r.token);
      on_token(*req, *child, r.token, r.prob);
    }
  }
}

// A token for every scheduled sequence whose every token is now computed: the runner's where it
// sampled the row, else the host sampler's.
void Engine::Impl::sample(const SchedulerOutput& so, const ForwardBatch& batch, const DeviceSampled& dev) {
  const int vocab = file->config.vocab_size;
  for (size_t i = 0; i < so.scheduled.size(); ++i) {
    const int row = batch.seqs[i].logits_row;
    if (row < 0) continue;
    auto [req, st] = by_seq.at(so.scheduled[i].seq->seq_id);
    if (st->done || !st->seq->spec_tokens.empty()) continue;
    const size_t r = static_cast<size_t>(row);
    float* lrow = logits.data() + r * vocab;
    const SampleResult s = !dev.token.empty() && dev.rows[r]
                               ? SampleResult{dev.token[r], dev.prob[r]}
                               : sampler.sample(lrow, vocab, req->params, st->rng, st->seq->tokens,
                                                static_cast<size_t>(st->seq->num_prompt_tokens));
    record_logprobs(*req, *st, lrow, s.token);
    on_token(*req, *st, s.token, s.prob);
  }
}

// Speculating sequences: the verifier emits the accepted guesses and the target's next token,
// one by one through the stop conditions. Then each rolls back what it did not keep: the
// accepted guesses' K/V stays (it is the target's), the slots past it go back to the pool,
// and only now-computed full blocks are hashed (rejected tokens never are).
void Engine::Impl::verify(const SchedulerOutput& so, const ForwardBatch& batch) {
  if (!proposer) return;
  const int vocab = file->config.vocab_size;
  for (size_t i = 0; i < so.scheduled.size(); ++i) {
    const ScheduledSeq& ss = so.scheduled[i];
    if (ss.num_spec_slots == 0) continue;
    // Plain pointers, not a structured binding: the emit lambda below captures them.
    Request* const req = by_seq.at(ss.seq->seq_id).first;
    SeqState* const st = by_seq.at(ss.seq->seq_id).second;
    Sequence& q = *st->seq;
    const std::vector<int> guesses = std::move(q.spec_tokens);
    q.spec_tokens.clear();
    if (st->done) continue;
    int accepted = 0;
    if (!guesses.empty()) {
      float* rows = logits.data() + static_cast<size_t>(batch.seqs[i].logits_row) * vocab;
      accepted = verifier.verify(rows, vocab, guesses, st->draft_q, req->params, st->rng, q.tokens,
                                 [&](int token, float prob, bool from_draft) {
                                   on_token(*req, *st, token, prob, from_draft);
                                   return !st->done && !q.paused;   // stopped, or held (step_request)
                                 },
                                 static_cast<size_t>(q.num_prompt_tokens));
      const int drafted = static_cast<int>(guesses.size());
      st->out.speculative.add_round(drafted, accepted);
      spec_step.add_round(drafted, accepted);
      st->draft_length.update(drafted, accepted, st->draft_doubted);
    }
    if (st->done) continue;   // finished: its blocks are released already
    // The accepted guesses' K/V is the target's; the newest token stays uncomputed (its logits
    // are the next step's), also when a pause cut the round after an accepted guess.
    q.num_computed_tokens = std::min(q.num_computed_tokens + accepted, q.num_tokens() - 1);
    blocks->commit_computed(q);
    blocks->trim(q);
    proposer->rollback(q);
  }
  spec_total.add(spec_step);
}

// Outputs of the requests that changed this step; finished ones are dropped once reported
// (the heatmap's request stays while it is shown).
std::vector<RequestOutput> Engine::Impl::collect_outputs() {
  std::vector<RequestOutput> outs;
  for (auto it = requests.begin(); it != requests.end();) {
    Request& r = *it->second;
    if (r.changed) {
      r.changed = false;
      RequestOutput o = output->make_output(r);
      if (o.finished) r.reported_finished = true;
      outs.push_back(std::move(o));
    }
    if (r.reported_finished && capture_request != r.id) {
      for (auto& s : r.seqs) by_seq.erase(s->seq->seq_id);
      it = requests.erase(it);
    } else {
      ++it;
    }
  }
  return outs;
}

std::vector<RequestOutput> Engine::step() {
  Impl& m = *impl_;
  const auto t0 = Clock::now();
  TraceRange step_range("step");
  StepTimes times;
  m.spec_step = SpeculativeStats{};
  m.plan_speculation();
  const SchedulerOutput so = m.schedule();
  times.schedule = seconds_since(t0);
  if (!so.empty()) {
    if (!so.copies.empty()) {
      TraceRange r("copy blocks");
      m.runner->copy_blocks(so.copies);
      if (m.proposer) m.proposer->copy_blocks(so.copies);
    }
    const auto td = Clock::now();
    m.propose(so);
    times.draft = seconds_since(td);
    const ForwardBatch batch = m.build_batch(so);
    DeviceSampled dev = m.rows_for_the_runner_to_sample(so, batch);
    const auto t1 = Clock::now();
    m.execute(batch, dev);
    times.forward = seconds_since(t1);
    m.learn_spec_cost(so, batch, times);
    const auto t2 = Clock::now();
    TraceRange sample_range("sample");
    m.advance(so);
    m.fork_parallel_samples(so, batch);
    m.sample(so, batch, dev);
    m.verify(so, batch);
    times.sample = seconds_since(t2);
  }
  ++m.step_count;
  std::vector<RequestOutput> outs = m.collect_outputs();
  m.follow_newest_request();
  m.fill_telemetry(so, times, seconds_since(t0));
  return outs;
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
  r.t_done = seconds_since(r.t_added);
}

void Engine::pause(uint64_t request_id) {
  auto it = impl_->requests.find(request_id);
  if (it != impl_->requests.end() && !it->second->reported_finished) impl_->set_paused(*it->second, true, false);
}

void Engine::resume(uint64_t request_id) {
  auto it = impl_->requests.find(request_id);
  if (it != impl_->requests.end() && !it->second->reported_finished) impl_->set_paused(*it->second, false, false);
}

void Engine::step_request(uint64_t request_id) {
  auto it = impl_->requests.find(request_id);
  if (it != impl_->requests.end() && !it->second->reported_finished) impl_->set_paused(*it->second, false, true);
}

bool Engine::is_paused(uint64_t request_id) const {
  auto it = impl_->requests.find(request_id);
  return it != impl_->requests.end() && it->second->paused;
}

bool Engine::has_runnable() const {
  for (auto& [id, r] : impl_->requests)
    if (!r->reported_finished && (!r->paused || r->changed)) return true;
  return false;
}

bool Engine::has_unfinished() const {
  for (auto& [id, r] : impl_->requests)
    if (!r->reported_finished) return true;
  return false;
}

const StepTelemetry& Engine::telemetry() const { return impl_->telemetry; }
const ModelInfo& Engine::model_info() const { return impl_->info; }
const EngineConfig& Engine::config() const { return impl_->cfg; }

std::vector<int> Engine::encode(const std::string& text, bool add_bos, bool parse_special) const {
  std::vector<int> ids;
  if (add_bos && impl_->tok->add_bos()) ids.push_back(impl_->tok->bos_id());
  const std::vector<int> body = parse_special ? impl_->tok->encode_with_special(text) : impl_->tok->encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

std::string Engine::decode(const std::vector<int>& ids) const { return impl_->tok->decode(ids); }
std::string Engine::token_text(int id) const { return impl_->tok->display(id); }
int Engine::bos_id() const { return impl_->tok->bos_id(); }
int Engine::eos_id() const { return impl_->tok->eos_id(); }

}  // namespace llmwb
