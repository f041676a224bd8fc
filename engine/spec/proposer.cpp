// proposer.cpp — make_proposer: the proposer a SpeculativeConfig names, with its draft model
// loaded, checked against the target and given a KV pool mirroring the target's.
#include "spec/proposer.h"

#include <algorithm>
#include <cstdlib>

#include "llmwb/errors.h"
#include "llmwb/flops.h"
#include "model/model_describe.h"
#include "model/llama_weights.h"
#include "quant/weight_quantizer.h"
#include "runner/model_runner.h"
#include "spec/model_proposer.h"
#include "spec/ngram_proposer.h"
#include "tokenizer/tokenizer.h"

namespace llmwb {

namespace {

// A draft must speak the target's vocabulary token for token: the verifier compares ids.
void check_same_vocabulary(const Tokenizer& target, const std::string& target_path, const Tokenizer& draft,
                           const std::string& draft_path) {
  const int n = target.vocab_size(), m = draft.vocab_size();
  for (int i = 0; i < std::min(n, m); ++i)
    if (target.piece(i) != draft.piece(i))
      throw Error(draft_path, "the draft's vocabulary differs from the target's (" + target_path + "): token " +
                                  std::to_string(i) + " is '" + draft.piece(i) + "' in the draft but '" +
                                  target.piece(i) + "' in the target");
  if (n != m)
    throw Error(draft_path, "the draft's vocabulary has " + std::to_string(m) + " tokens but the target's (" +
                                target_path + ") has " + std::to_string(n) + "; the first " +
                                std::to_string(std::min(n, m)) + " agree");
}

// Bytes a decode step reads (llmwb::decode_weight_bytes), counting only the first `layers`
// blocks where layers >= 0 (an early exit).
uint64_t decode_bytes(const ModelFile& f, int layers = -1) {
  ModelInfo info = describe_model(f, nullptr);
  if (layers >= 0)
    std::erase_if(info.tensors, [&](const TensorInfo& t) {
      return t.name.rfind("blk.", 0) == 0 && std::atoi(t.name.c_str() + 4) >= layers;
    });
  return decode_weight_bytes(info);
}

// draft_p_min as the proposer applies it: automatic = the draft's share of the target's bytes.
float doubt_threshold(const SpeculativeConfig& s, double bytes_share) {
  if (s.draft_p_min_automatic()) return static_cast<float>(std::clamp(bytes_share, 0.0, 0.9));
  return static_cast<float>(std::max(0.0, s.draft_p_min));
}

std::unique_ptr<Proposer> draft_runner_proposer(const EngineConfig& cfg, const ProposerTarget& t,
                                                const std::string& path, const std::string& quantize) {
  auto file = load_model_file(path);
  file->config.validate(file->path);
  if (path != t.file->path) {
    // The draft's own tokenizer; a llama2.c .bin has none and uses the target's --tokenizer.
    std::unique_ptr<Tokenizer> tok;
    try {
      tok = load_tokenizer_for(*file, "");
    } catch (const Error&) {
      if (cfg.tokenizer.empty()) throw;
      tok = load_tokenizer_for(*file, cfg.tokenizer);
    }
    check_same_vocabulary(*t.tokenizer, t.file->path, *tok, file->path);
  }
  if (file->config.vocab_size != t.file->config.vocab_size)
    throw Error(file->path, "the draft's logits have " + std::to_string(file->config.vocab_size) +
                                " entries but the target's (" + t.file->path + ") have " +
                                std::to_string(t.file->config.vocab_size));
  LlamaWeights weights = LlamaWeights::bind(*file);
  if (!quantize.empty()) quantize_weights_in_place(*file, weights, quantize, cfg.backend);
  auto runner = make_model_runner(cfg.backend, cfg.threads, cfg.tuning, *file, std::move(weights), {});
  runner->allocate_kv(t.num_blocks, t.block_size, t.kv_dtype);
  const double share = double(decode_bytes(*file)) / double(std::max<uint64_t>(1, decode_bytes(*t.file)));
  auto proposer = std::make_unique<ModelProposer>(cfg.speculative.method, std::move(file), std::move(runner));
  proposer->set_p_min(doubt_threshold(cfg.speculative, share));
  return proposer;
}

}  // namespace

std::unique_ptr<Proposer> make_proposer(const EngineConfig& cfg, const ProposerTarget& t) {
  const SpeculativeConfig& s = cfg.speculative;
  s.validate();
  if (s.method == "ngram") return std::make_unique<NgramProposer>(s.prompt_lookup_min, s.prompt_lookup_max);
  if (s.method == "draft_model") return draft_runner_proposer(cfg, t, s.model, "");
  // The target's own weights at 4 bits (llama.cpp's Q4_0, head in Q6_K): a draft that reads
  // about a seventh of an f32 target's bytes per token.
  if (s.method == "self_int4") return draft_runner_proposer(cfg, t, t.file->path, "q4_0");
  if (s.method == "layers") {
    const int n = t.file->config.n_layers;
    if (s.layers >= n)
      throw Error("speculative.layers", std::to_string(s.layers) + " is not fewer than the target's " +
                                            std::to_string(n) + " layers");
    if (!t.runner_exits_early)
      throw Error("speculative.layers", "the " + cfg.backend + " backend cannot exit after the first layers");
    auto proposer = std::make_unique<ModelProposer>("layers", *t.runner, t.file->config.vocab_size, s.layers);
    const double share = double(decode_bytes(*t.file, s.layers)) / double(std::max<uint64_t>(1, decode_bytes(*t.file)));
    proposer->set_p_min(doubt_threshold(s, share));
    return proposer;
  }
  throw Error("speculative.method", "'" + s.method + "' is not ngram, draft_model, self_int4 or layers");
}

}  // namespace llmwb
