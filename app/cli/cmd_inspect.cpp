// llmwb-cli inspect — what a model file is: format, hyper-parameters, parameters, tensors,
// tokenizer, metadata. A text table by default, one JSON object with --json.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "args.h"
#include "command.h"
#include "json_output.h"
#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"
#include "model/model_describe.h"
#include "format/model_file.h"
#include "tokenizer/tokenizer.h"

namespace llmwb::cli {
namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? " x " : "") + std::to_string(s[i]);
  return r;
}

std::string count_text(uint64_t n) {
  char buf[32];
  if (n >= 1000000000)
    std::snprintf(buf, sizeof buf, "%.2f B", static_cast<double>(n) / 1e9);
  else if (n >= 1000000)
    std::snprintf(buf, sizeof buf, "%.2f M", static_cast<double>(n) / 1e6);
  else if (n >= 1000)
    std::snprintf(buf, sizeof buf, "%.1f K", static_cast<double>(n) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  return buf;
}

// Metadata values can be whole vocabularies; a table row shows their start.
std::string clip(const std::string& s, size_t n = 96) {
  std::string r = s.size() > n ? s.substr(0, n) + "... (" + std::to_string(s.size()) + " chars)" : s;
  for (char& c : r)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return r;
}

nlohmann::ordered_json to_json(const ModelInfo& m, const std::string& tokenizer_note) {
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const auto& t : m.tensors)
    tensors.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"bytes", t.nbytes}});
  nlohmann::ordered_json j = {
      {"path", m.path},
      {"format", m.format},
      {"architecture", m.architecture},
      {"name", m.name},
      {"dim", m.dim},
      {"hidden_dim", m.hidden_dim},
      {"n_layers", m.n_layers},
      {"n_heads", m.n_heads},
      {"n_kv_heads", m.n_kv_heads},
      {"head_dim", m.head_dim},
      {"vocab_size", m.vocab_size},
      {"context_length", m.context_length},
      {"rope_theta", m.rope_theta},
      {"norm_eps", m.norm_eps},
      {"rope_layout", m.rope_layout},
      {"rope_scaling", m.rope_scaling},
      {"tied_embeddings", m.tied_embeddings},
      {"qkv_bias", m.qkv_bias},
      {"qk_norm", m.qk_norm},
      {"n_params", m.n_params},
      {"weight_bytes", m.weight_bytes},
      {"dtype_summary", m.dtype_summary},
      {"tokenizer",
       {{"kind", m.tokenizer_kind},
        {"path", m.tokenizer_path},
        {"vocab", m.tokenizer_vocab},
        {"bos_id", m.bos_id},
        {"eos_id", m.eos_id}}},
      {"chat_template", m.chat_template},
      {"tensors", tensors},
      {"metadata", m.metadata},
  };
  if (!tokenizer_note.empty()) j["tokenizer"]["note"] = tokenizer_note;
  nlohmann::ordered_json tuning = nlohmann::ordered_json::object();
  for (const auto& [k, v] : m.tuning) tuning[k] = v;
  j["tuning"] = tuning;
  return j;
}

void print_text(const ModelInfo& m, const std::string& tokenizer_note) {
  std::printf("model         %s\n", m.path.c_str());
  std::printf("format        %s\n", m.format.c_str());
  std::printf("architecture  %s%s%s\n", m.architecture.c_str(), m.name.empty() ? "" : "  name: ", m.name.c_str());
  std::printf("shape         dim %d, ffn %d, layers %d, heads %d, kv heads %d, head dim %d\n", m.dim, m.hidden_dim,
              m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim);
  if (m.qkv_bias || m.qk_norm)
    std::printf("attention     %s%s%s\n", m.qkv_bias ? "Q/K/V bias" : "", m.qkv_bias && m.qk_norm ? ", " : "",
                m.qk_norm ? "per-head Q/K RMSNorm" : "");
  std::printf("vocabulary    %d   context %d\n", m.vocab_size, m.context_length);
  std::printf("rope          theta %g, %s, scaling %s\n", static_cast<double>(m.rope_theta), m.rope_layout.c_str(),
              m.rope_scaling.c_str());
  std::printf("norm eps      %g\n", static_cast<double>(m.norm_eps));
  std::printf("output head   %s\n", m.tied_embeddings ? "tied to the embedding" : "separate");
  std::printf("parameters    %s (%llu), %.2f MiB of weights\n", count_text(m.n_params).c_str(),
              static_cast<unsigned long long>(m.n_params), static_cast<double>(m.weight_bytes) / (1 << 20));
  std::printf("types         %s\n", m.dtype_summary.c_str());
  std::printf("tokenizer     %s", m.tokenizer_kind.c_str());
  if (m.tokenizer_vocab > 0) std::printf(", %d pieces", m.tokenizer_vocab);
  std::printf(", bos %d, eos %d", m.bos_id, m.eos_id);
  if (!m.tokenizer_path.empty()) std::printf(" (%s)", m.tokenizer_path.c_str());
  std::printf("\n");
  if (!tokenizer_note.empty()) std::printf("              %s\n", tokenizer_note.c_str());
  if (!m.chat_template.empty()) std::printf("chat template %s\n", clip(m.chat_template).c_str());
  std::string tuning;
  for (const auto& [k, v] : m.tuning) tuning += (tuning.empty() ? "" : ", ") + k + " " + v;
  if (!tuning.empty()) std::printf("tuning        %s   (LLMWB_* variables; llmwb-cli --help)\n", tuning.c_str());

  size_t w = 4;
  for (const auto& t : m.tensors) w = std::max(w, t.name.size());
  std::printf("\ntensors (%zu)\n  %-*s  %-5s  %-16s  %s\n", m.tensors.size(), static_cast<int>(w), "name", "type",
              "shape", "bytes");
  for (const auto& t : m.tensors)
    std::printf("  %-*s  %-5s  %-16s  %llu\n", static_cast<int>(w), t.name.c_str(), t.dtype.c_str(),
                shape_text(t.shape).c_str(), static_cast<unsigned long long>(t.nbytes));
  if (!m.metadata.empty()) {
    std::printf("\nmetadata (%zu)\n", m.metadata.size());
    for (const auto& [k, v] : m.metadata) std::printf("  %s = %s\n", k.c_str(), clip(v).c_str());
  }
}

int run_inspect(const std::vector<std::string>& argv) {
  Args a(argv, {"model", "tokenizer"}, {"json"});
  if (!a.has("model")) throw UsageError("--model is required");
  const std::unique_ptr<ModelFile> model = load_model_file(a.str("model"));

  // An explicit --tokenizer must load; otherwise a missing or broken tokenizer is reported
  // beside the model, which is still worth describing.
  std::unique_ptr<Tokenizer> tok;
  std::string note;
  if (a.has("tokenizer")) {
    tok = load_tokenizer_for(*model, a.str("tokenizer"));
  } else {
    try {
      tok = load_tokenizer_for(*model, "");
    } catch (const Error& e) {
      note = std::string("no tokenizer loaded: ") + e.what();
    }
  }
  ModelInfo info = describe_model(*model, tok.get());
  info.tuning = TuningConfig::from_environment().describe();   // what an engine would run with
  if (a.flag("json"))
    std::printf("%s\n", dump_json(to_json(info, note), 2).c_str());
  else
    print_text(info, note);
  return 0;
}

const CommandRegistration kRegistration({
    "inspect",
    "describe a model file: format, shape, parameters, tensors, tokenizer, metadata",
    "--model PATH (.gguf, llama2.c .bin, or a Hugging Face folder) [--tokenizer PATH] [--json]",
    &run_inspect,
});

}  // namespace
}  // namespace llmwb::cli
