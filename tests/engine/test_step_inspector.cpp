// The token inspector's engine side: Engine::inspect_step reproduces the step it inspects (the
// sampler's view makes the sampler's decision, seeded or greedy, at every step), the logit lens
// after the last layer is the model's own logits, the stages come in the sampler's order, a
// fork from a candidate continues exactly as the extended prompt does, and pausing one request
// of a batch leaves the others' tokens as they were.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <map>

#include "llmwb/engine.h"
#include "llmwb/errors.h"
#include "support/test_support.h"

using namespace llmwb;

namespace {

EngineConfig stories() {
  EngineConfig c;
  c.model = test::shared_path("models/stories260K/stories260K.bin");
  c.tokenizer = test::shared_path("models/stories260K/tok512.bin");
  c.threads = 2;
  c.max_model_len = 256;
  return c;
}

RequestOutput run_one(Engine& e, const std::vector<int>& prompt, const SamplingParams& p) {
  const uint64_t id = e.add_request_tokens(prompt, p);
  RequestOutput done;
  while (e.has_unfinished())
    for (RequestOutput& o : e.step())
      if (o.request_id == id && o.finished) done = o;
  return done;
}

InspectStepRequest step_of(const RequestOutput& r, const SamplingParams& p, int i) {
  InspectStepRequest q;
  q.context = r.prompt_token_ids;
  const auto& ids = r.outputs[0].token_ids;
  q.context.insert(q.context.end(), ids.begin(), ids.begin() + i);
  q.params = p;
  q.seed = r.outputs[0].seed;
  q.draws_before = p.temperature > 0.f ? i : 0;
  return q;
}

SamplingParams seeded() {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  p.repetition_penalty = 1.1f;
  p.seed = 1234;
  p.max_tokens = 40;
  return p;
}

}  // namespace

TEST(StepInspector, SeededSamplerViewMakesTheSamplersDecisionAtEveryStep) {
  Engine e(stories());
  const SamplingParams p = seeded();
  const RequestOutput r = run_one(e, e.encode("Once upon a time", true), p);
  const auto& ids = r.outputs[0].token_ids;
  ASSERT_GE(ids.size(), 20u);
  for (size_t i = 0; i < ids.size(); ++i) {
    const StepInspection s = e.inspect_step(step_of(r, p, static_cast<int>(i)));
    EXPECT_EQ(s.sampler.chosen, ids[i]) << "token " << i;
    EXPECT_NEAR(s.sampler.chosen_prob, r.outputs[0].token_probs[i], 1e-6) << "token " << i;
    EXPECT_GE(s.sampler.draw, 0.0);
    EXPECT_LT(s.sampler.draw, 1.0);
    // The draw fell inside the chosen candidate's share of the kept mass.
    EXPECT_LE(s.sampler.draw_cdf_before, s.sampler.draw + 1e-12);
    EXPECT_GT(s.sampler.draw_cdf_before + s.sampler.chosen_prob, s.sampler.draw - 1e-6);
  }
}

TEST(StepInspector, GreedyViewChoosesTheArgmaxAndListsCandidatesByLogit) {
  Engine e(stories());
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 30;
  const RequestOutput r = run_one(e, e.encode("Lily liked", true), p);
  const auto& ids = r.outputs[0].token_ids;
  for (size_t i = 0; i < ids.size(); ++i) {
    const StepInspection s = e.inspect_step(step_of(r, p, static_cast<int>(i)));
    EXPECT_EQ(s.sampler.chosen, ids[i]);
    EXPECT_TRUE(s.sampler.greedy);
    ASSERT_EQ(s.sampler.candidates.size(), 20u);
    EXPECT_EQ(s.sampler.candidates[0].token, ids[i]);
    for (size_t k = 1; k < s.sampler.candidates.size(); ++k)
      EXPECT_GE(s.sampler.candidates[k - 1].logit, s.sampler.candidates[k].logit);
  }
}

TEST(StepInspector, LensAfterTheLastLayerIsTheModelsOwnLogitsBitwise) {
  Engine e(stories());
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 8;
  const RequestOutput r = run_one(e, e.encode("The cat", true), p);
  const StepInspection s = e.inspect_step(step_of(r, p, 5));
  ASSERT_EQ(static_cast<int>(s.lens.size()), e.model_info().n_layers);
  const std::vector<float>& last = s.lens.back().logits;
  ASSERT_EQ(last.size(), s.logits.size());
  EXPECT_EQ(std::memcmp(last.data(), s.logits.data(), last.size() * sizeof(float)), 0);
  EXPECT_EQ(s.lens.back().chosen_rank, 0);
  // Earlier layers differ, and their norms are real numbers.
  EXPECT_NE(std::memcmp(s.lens.front().logits.data(), s.logits.data(), last.size() * sizeof(float)), 0);
  for (const LensLayer& l : s.lens) {
    EXPECT_GT(l.residual_norm, 0);
    EXPECT_GT(l.attention_norm, 0);
    EXPECT_GT(l.ffn_norm, 0);
    EXPECT_EQ(l.top.size(), 5u);
  }
}

TEST(StepInspector, StagesComeInTheSamplersOrderAndRemovalsMatchTheirLimits) {
  Engine e(stories());
  SamplingParams p = seeded();
  p.top_k = 12;
  p.top_p = 0.8f;
  const RequestOutput r = run_one(e, e.encode("Once upon a time", true), p);
  InspectStepRequest q = step_of(r, p, 3);
  q.top_candidates = 30;
  const StepInspection s = e.inspect_step(q);
  const std::vector<std::string> order{"repetition_penalty", "temperature", "top_k", "top_p", "min_p"};
  EXPECT_EQ(s.sampler.stages, order);
  double kept_mass = 0;
  int kept = 0;
  for (const SamplerCandidate& c : s.sampler.candidates) {
    if (c.rank >= 12) {
      EXPECT_EQ(c.removed_by, SamplerStage::TopK) << "rank " << c.rank;
    }
    if (c.removed_by == SamplerStage::None) {
      ++kept;
      kept_mass += c.prob_final;
      EXPECT_GT(c.prob_final, 0);
    } else {
      EXPECT_EQ(c.prob_final, 0);
    }
  }
  EXPECT_EQ(kept, s.sampler.kept);
  EXPECT_NEAR(kept_mass, 1.0, 1e-5);
  // Penalized tokens are exactly the ones already in the context.
  for (const SamplerCandidate& c : s.sampler.candidates) {
    const bool seen = std::find(q.context.begin(), q.context.end(), c.token) != q.context.end();
    if (c.logit != 0.f) {
      EXPECT_EQ(c.penalized, seen) << "token " << c.token;
    }
  }
}

TEST(StepInspector, AttentionAndTimingCoverEveryLayerAndHead) {
  Engine e(stories());
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 10;
  const RequestOutput r = run_one(e, e.encode("A dog", true), p);
  const StepInspection s = e.inspect_step(step_of(r, p, 9));
  const ModelInfo& m = e.model_info();
  ASSERT_EQ(s.attention.weights.size(), size_t(m.n_layers) * size_t(m.n_heads));
  for (const auto& row : s.attention.weights) {
    ASSERT_EQ(static_cast<int>(row.size()), s.position + 1);
    double sum = 0;
    for (float w : row) sum += w;
    EXPECT_NEAR(sum, 1.0, 1e-4);
  }
  EXPECT_FALSE(s.attention.blocks_read.empty());
  double layers = 0;
  bool saw_attention = false;
  for (const OpTime& o : s.timing.ops) {
    layers = std::max(layers, double(o.layer));
    saw_attention = saw_attention || o.op == "attention";
    EXPECT_GE(o.seconds, 0);
  }
  EXPECT_EQ(layers, m.n_layers - 1);
  EXPECT_TRUE(saw_attention);
  EXPECT_GT(s.timing.weight_bytes, 0);
  EXPECT_GT(s.timing.flops, 0);
  EXPECT_GT(s.timing.forward_seconds, 0);
}

TEST(StepInspector, InspectingLeavesNoBlocksHeld) {
  Engine e(stories());
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 12;
  const RequestOutput r = run_one(e, e.encode("Tom ran", true), p);
  e.step();
  const int used_before = e.telemetry().blocks_used;
  for (int i = 0; i < 12; ++i) e.inspect_step(step_of(r, p, i));
  e.step();
  EXPECT_EQ(e.telemetry().blocks_used, used_before);
  EXPECT_EQ(e.telemetry().blocks_used + e.telemetry().blocks_cached + e.telemetry().blocks_free,
            e.telemetry().blocks_total);
}

TEST(StepInspector, ForkFromACandidateContinuesAsTheExtendedPrompt) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 30;
  Engine e(stories());
  const std::vector<int> prompt = e.encode("Once upon a time", true);
  const RequestOutput r = run_one(e, prompt, p);
  const StepInspection s = e.inspect_step(step_of(r, p, 20));   // past one full KV block
  const int alt = s.sampler.candidates[2].token;   // not the chosen one
  ASSERT_NE(alt, r.outputs[0].token_ids[20]);
  std::vector<int> forked = s.context;
  forked.push_back(alt);
  const RequestOutput f = run_one(e, forked, p);
  EXPECT_GT(f.num_cached_prompt_tokens, 0);   // the prefix cache had the shared context
  Engine fresh(stories());
  const RequestOutput g = run_one(fresh, forked, p);
  EXPECT_EQ(f.outputs[0].token_ids, g.outputs[0].token_ids);
}

TEST(StepInspector, PausingOneRequestOfEightLeavesTheOthersUnchanged) {
  const char* prompts[] = {"Once", "The dog", "A girl", "Tom", "The sun", "Lily", "One day", "Ben"};
  SamplingParams p;
  p.temperature = 0.8f;
  p.seed = 5;
  p.max_tokens = 24;
  auto run = [&](bool pause) {
    Engine e(stories());
    std::vector<uint64_t> ids;
    for (const char* t : prompts) ids.push_back(e.add_request(t, p));
    std::map<uint64_t, std::vector<int>> out;
    int steps = 0;
    int stepped = 0;
    while (e.has_unfinished()) {
      if (pause) {
        // Held from step 3 while the others run, let through one token at steps 10, 15 and
        // 20, resumed at step 40 or once nothing else is left to run.
        if (steps == 3) e.pause(ids[3]);
        if (steps == 10 || steps == 15 || steps == 20) {
          e.step_request(ids[3]);
          ++stepped;
        }
        if (steps == 40 || !e.has_runnable()) e.resume(ids[3]);
      }
      for (RequestOutput& o : e.step())
        if (o.finished) out[o.request_id] = o.outputs[0].token_ids;
      if (++steps > 2000) {
        ADD_FAILURE() << "did not finish";
        break;
      }
    }
    EXPECT_TRUE(!pause || stepped >= 3);
    std::vector<std::vector<int>> v;
    for (uint64_t id : ids) v.push_back(out[id]);
    return v;
  };
  const auto plain = run(false);
  const auto paused = run(true);
  ASSERT_EQ(plain.size(), paused.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(plain[i], paused[i]) << "request " << i;
}

TEST(StepInspector, APausedRequestIsNotScheduledAndKeepsItsBlocks) {
  Engine e(stories());
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 50;
  const uint64_t id = e.add_request("Once upon a time", p);
  e.step();
  e.step();
  e.pause(id);
  std::vector<RequestOutput> outs = e.step();   // reports the pause
  ASSERT_FALSE(outs.empty());
  EXPECT_TRUE(outs[0].paused);
  const size_t tokens = outs[0].outputs[0].token_ids.size();
  const int used = e.telemetry().blocks_used;
  EXPECT_GT(used, 0);
  EXPECT_FALSE(e.has_runnable());
  EXPECT_TRUE(e.has_unfinished());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(e.step().empty());
  EXPECT_EQ(e.telemetry().blocks_used, used);
  e.step_request(id);
  outs = e.step();
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].outputs[0].token_ids.size(), tokens + 1);
  EXPECT_TRUE(outs[0].paused);
  e.resume(id);
  while (e.has_unfinished()) e.step();
}

TEST(StepInspector, BadContextsAreRefusedWithAClearError) {
  Engine e(stories());
  InspectStepRequest q;
  EXPECT_THROW(e.inspect_step(q), Error);
  q.context = {1, 99999};
  try {
    e.inspect_step(q);
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("outside the vocabulary"), std::string::npos) << err.what();
  }
  q.context.assign(300, 1);
  EXPECT_THROW(e.inspect_step(q), Error);
}
