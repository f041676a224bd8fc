// OpenAI's presence and frequency penalties and log probabilities: the penalties subtract from
// the logits of generated tokens only (the prompt does not count), by OpenAI's formula; log
// probabilities are the log-softmax of the penalized logits, and the engine reports them per
// completion token, the sampled token's agreeing with the greedy choice.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "llmwb/engine.h"
#include "llmwb/errors.h"
#include "sample/sampler.h"
#include "support/test_support.h"

using namespace llmwb;

namespace {

TEST(Penalties, PresenceAndFrequencyPenaltiesSubtractFromGeneratedTokensOnly) {
  Sampler s;
  Rng rng(1);
  SamplingParams p;
  p.temperature = 0;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  std::vector<float> l = {1.f, 1.f, 1.f, 1.f};
  // Prompt {0, 1}, generated {1, 2, 2}: token 0 is only in the prompt.
  s.sample(l.data(), 4, p, rng, {0, 1, 1, 2, 2}, 2);
  EXPECT_FLOAT_EQ(l[0], 1.f);
  EXPECT_FLOAT_EQ(l[1], 1.f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[2], 1.f - 0.5f - 2 * 0.25f);
  EXPECT_FLOAT_EQ(l[3], 1.f);
}

TEST(Penalties, ANegativePresencePenaltyFavoursRepeatingAToken) {
  Sampler s;
  Rng rng(1);
  SamplingParams p;
  p.temperature = 0;
  p.presence_penalty = -2.f;
  std::vector<float> l = {1.f, 2.f, 0.5f};
  EXPECT_EQ(s.sample(l.data(), 3, p, rng, {9, 2}, 1).token, 2);
}

TEST(Penalties, ValidateRejectsPenaltiesOutsideOpenAIsRange) {
  SamplingParams p;
  p.presence_penalty = 2.5f;
  EXPECT_THROW(p.validate(), Error);
  p.presence_penalty = 0;
  p.frequency_penalty = -2.1f;
  EXPECT_THROW(p.validate(), Error);
  p.frequency_penalty = 0;
  p.logprobs = 21;
  EXPECT_THROW(p.validate(), Error);
}

TEST(Logprobs, AreTheLogSoftmaxOfTheLogitsWithTheMostLikelyFirst) {
  Sampler s;
  const std::vector<float> l = {std::log(0.2f), std::log(0.5f), std::log(0.3f)};
  std::vector<TokenLogprob> top;
  const float lp = s.logprobs(l.data(), 3, 2, 2, top);
  EXPECT_NEAR(lp, std::log(0.3), 1e-5);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].token, 1);
  EXPECT_NEAR(top[0].logprob, std::log(0.5), 1e-5);
  EXPECT_EQ(top[1].token, 2);
}

TEST(Logprobs, TheEngineReportsOnePerTokenAndGreedyPicksTheTopOne) {
  EngineConfig c;
  c.model = test::shared_path("models/stories260K/stories260K.gguf");
  c.threads = 1;
  c.max_model_len = 128;
  Engine e(c);
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 8;
  p.ignore_eos = true;
  p.logprobs = 3;
  const uint64_t id = e.add_request("Once upon a time", p);
  RequestOutput last;
  while (e.has_unfinished())
    for (auto& o : e.step())
      if (o.request_id == id) last = o;
  ASSERT_TRUE(last.finished);
  const CompletionOutput& out = last.outputs[0];
  ASSERT_EQ(out.token_logprobs.size(), out.token_ids.size());
  ASSERT_EQ(out.top_logprobs.size(), out.token_ids.size());
  for (size_t i = 0; i < out.token_ids.size(); ++i) {
    ASSERT_EQ(out.top_logprobs[i].size(), 3u);
    EXPECT_EQ(out.top_logprobs[i][0].token, out.token_ids[i]);
    EXPECT_FLOAT_EQ(out.top_logprobs[i][0].logprob, out.token_logprobs[i]);
    EXPECT_LE(out.token_logprobs[i], 0.f);
    EXPECT_NEAR(std::exp(out.token_logprobs[i]), out.token_probs[i], 1e-4);
  }
}

}  // namespace
