// Tests of the Hugging Face folder loader: stories260K's hf/ against its llama2.c .bin (same
// config, same tensors, q/k rows in rotate-half order), sharded folders, tokenizer files,
// and the errors for broken folders, each naming the file and the key or tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "llmwb/errors.h"
#include "format/model_file.h"
#include "model/model_maker.h"
#include "memory/mapped_file.h"
#include "format/safetensors_file.h"
#include "format/safetensors_writer.h"
#include "support/loader_expectations.h"
#include "support/test_support.h"

namespace llmwb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A random small model as a Hugging Face folder in scratch/`name`.
std::string make_folder(const std::string& name, uint64_t shard_bytes = uint64_t{2} << 30) {
  ModelMakerOptions o;
  o.config = test::small_test_config();
  o.format = "safetensors";
  o.seed = 7;
  o.out = test::scratch_dir(name) + "/model";
  o.shard_bytes = shard_bytes;
  make_model(o);
  return o.out;
}

void edit_config(const std::string& dir, const std::function<void(json&)>& edit) {
  json j = json::parse(test::read_file(dir + "/config.json"));
  edit(j);
  test::write_file(dir + "/config.json", j.dump(2));
}

void expect_load_error(const std::string& dir, const std::vector<std::string>& parts) {
  test::expect_error_naming([&] { load_hf_folder(dir); }, parts);
}

TEST(HfFolder, Stories260KLoadsWithTheConfigOfTheBin) {
  const auto hf = load_hf_folder(test::shared_path("models/stories260K/hf"));
  const auto bin = load_llama2c(test::shared_path("models/stories260K/stories260K.bin"));
  const ModelConfig &a = hf->config, &b = bin->config;
  EXPECT_EQ(hf->format, "safetensors");
  test::expect_same_shape(a, b);
  EXPECT_EQ(a.max_seq_len, b.max_seq_len);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.bos_id, 1);
  EXPECT_EQ(a.eos_id, 2);
  EXPECT_EQ(a.rope_layout, RopeLayout::RotateHalf);
  EXPECT_EQ(hf->tokenizer.sp_model_path, test::shared_path("models/stories260K/hf") + "/tokenizer.model");
  EXPECT_EQ(hf->metadata.at("safetensors.format"), "pt");
  EXPECT_EQ(hf->metadata.at("hidden_act"), "silu");
  EXPECT_EQ(hf->tensors.size(), bin->tensors.size());
}

TEST(HfFolder, Stories260KTensorsOtherThanQkEqualTheBin) {
  const auto hf = load_hf_folder(test::shared_path("models/stories260K/hf"));
  const auto bin = load_llama2c(test::shared_path("models/stories260K/stories260K.bin"));
  for (const auto& t : bin->tensors) {
    const TensorView& h = hf->get(t.name);
    ASSERT_EQ(h.shape, t.shape) << t.name;
    if (t.name.find("attn_q") != std::string::npos || t.name.find("attn_k") != std::string::npos) continue;
    EXPECT_EQ(std::memcmp(h.data, t.data, t.nbytes), 0) << t.name;
  }
}

// HF row for head h, index i < hd/2 equals .bin row 2i; i >= hd/2 equals row 2(i - hd/2) + 1
// (transformers' convert_llama_weights_to_hf permutation), for wq and wk of every layer.
TEST(HfFolder, Stories260KQkRowsAreTheRotateHalfPermutationOfTheBin) {
  const auto hf = load_hf_folder(test::shared_path("models/stories260K/hf"));
  const auto bin = load_llama2c(test::shared_path("models/stories260K/stories260K.bin"));
  const int hd = bin->config.head_dim;
  int rows_checked = 0;
  for (int l = 0; l < bin->config.n_layers; ++l) {
    for (const char* which : {"attn_q", "attn_k"}) {
      const std::string name = "blk." + std::to_string(l) + "." + which + ".weight";
      const TensorView &h = hf->get(name), &b = bin->get(name);
      const int64_t heads = b.rows() / hd;
      for (int64_t head = 0; head < heads; ++head)
        for (int i = 0; i < hd; ++i) {
          const int64_t src = head * hd + (i < hd / 2 ? 2 * i : 2 * (i - hd / 2) + 1);
          ASSERT_EQ(std::memcmp(h.row(head * hd + i), b.row(src), b.row_bytes()), 0)
              << name << " head " << head << " row " << i;
          ++rows_checked;
        }
      // Not the identity: the permutation is real, so a loader that skipped it would fail here.
      EXPECT_NE(std::memcmp(h.row(1), b.row(1), b.row_bytes()), 0) << name;
    }
  }
  EXPECT_EQ(rows_checked, 5 * (64 + 32));
}

TEST(HfFolder, ShardedFolderLoadsIdenticallyToUnsharded) {
  const std::string one = make_folder("hf_unsharded");
  const std::string many = make_folder("hf_sharded", 20000);   // every few tensors a new shard
  EXPECT_TRUE(fs::exists(one + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(many + "/model.safetensors"));
  ASSERT_TRUE(fs::exists(many + "/model.safetensors.index.json"));
  const json index = json::parse(test::read_file(many + "/model.safetensors.index.json"));
  std::set<std::string> shard_files;
  for (auto& [k, v] : index["weight_map"].items()) shard_files.insert(v.get<std::string>());
  ASSERT_GT(shard_files.size(), 3u);

  const auto a = load_hf_folder(one);
  const auto b = load_hf_folder(many);
  EXPECT_EQ(a->maps.size(), 1u);
  EXPECT_EQ(b->maps.size(), shard_files.size()) << "each shard is mapped exactly once";
  ASSERT_EQ(a->tensors.size(), b->tensors.size());
  for (const auto& t : a->tensors) {
    const TensorView& u = b->get(t.name);
    ASSERT_EQ(u.shape, t.shape) << t.name;
    EXPECT_EQ(std::memcmp(u.data, t.data, t.nbytes), 0) << t.name;
  }
  EXPECT_EQ(a->config.dim, b->config.dim);
  EXPECT_EQ(a->config.n_kv_heads, b->config.n_kv_heads);
}

TEST(HfFolder, ReadsChatTemplateRopeScalingAndListEos) {
  const std::string dir = make_folder("hf_extras");
  test::write_file(dir + "/tokenizer_config.json", R"({"chat_template": "{{ bos_token }}{{ x }}", "add_bos_token": true})");
  edit_config(dir, [](json& j) {
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
    j["eos_token_id"] = {2, 1};
  });
  const auto m = load_hf_folder(dir);
  EXPECT_EQ(m->tokenizer.chat_template, "{{ bos_token }}{{ x }}");
  EXPECT_EQ(m->config.rope_scaling.type, "llama3");
  EXPECT_FLOAT_EQ(m->config.rope_scaling.factor, 8.0f);
  EXPECT_EQ(m->config.rope_scaling.original_max_position, 8192);
  EXPECT_EQ(m->config.eos_id, 2);
  EXPECT_EQ(m->tokenizer.sp_model_path, dir + "/tokenizer.model");
}

TEST(HfFolder, MissingConfigKeyIsNamed) {
  const std::string dir = make_folder("hf_missing_key");
  edit_config(dir, [](json& j) { j.erase("hidden_size"); });
  expect_load_error(dir, {"config.json", "missing key 'hidden_size'"});
}

TEST(HfFolder, InvalidConfigJsonNamesTheFile) {
  const std::string dir = make_folder("hf_bad_json");
  test::write_file(dir + "/config.json", "{\"hidden_size\": 64,");
  expect_load_error(dir, {dir + "/config.json", "invalid JSON"});
}

TEST(HfFolder, WrongTypesAndUnsupportedModelsAreNamed) {
  const std::string dir = make_folder("hf_bad_values");
  edit_config(dir, [](json& j) { j["num_attention_heads"] = "four"; });
  expect_load_error(dir, {"config.json", "num_attention_heads", "positive integer"});
  edit_config(dir, [](json& j) {
    j["num_attention_heads"] = 4;
    j["model_type"] = "gpt2";
  });
  expect_load_error(dir, {"config.json", "model_type", "gpt2"});
  edit_config(dir, [](json& j) {
    j["model_type"] = "llama";
    j["rope_scaling"] = {{"type", "yarn"}, {"factor", 2.0}};
  });
  expect_load_error(dir, {"config.json", "rope_scaling", "yarn"});
}

TEST(HfFolder, MissingTensorNamesTheFileAndTheTensor) {
  const std::string dir = make_folder("hf_missing_tensor");
  test::rewrite_safetensors(dir, "model.layers.1.mlp.up_proj.weight", nullptr);
  expect_load_error(dir, {dir + "/model.safetensors", "missing tensor 'model.layers.1.mlp.up_proj.weight'",
                          "blk.1.ffn_up.weight"});
}

TEST(HfFolder, TensorsBehindAnOddSizedOneAreRealigned) {
  const std::string a = make_folder("hf_aligned"), b = make_folder("hf_misaligned");
  // Three BF16 values first put every following F32 tensor at an address = 2 (mod 4).
  const uint16_t extra[3] = {0x3f80, 0x4000, 0x4040};
  test::rewrite_safetensors(b, "", [&](SafetensorsWriter& w) { w.add_tensor("extra.bias", DType::BF16, {3}, extra); });
  const auto ref = load_hf_folder(a);
  const auto m = load_hf_folder(b);
  EXPECT_EQ(m->get("extra.bias").shape, std::vector<int64_t>({3})) << "unknown tensors keep their stored name";
  for (const auto& t : ref->tensors) {
    const TensorView& u = m->get(t.name);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(u.data) % 4, 0u) << t.name;
    EXPECT_EQ(std::memcmp(u.data, t.data, t.nbytes), 0) << t.name;
  }
  EXPECT_FALSE(m->owned.empty());
}

TEST(HfFolder, ShapeMismatchNamesTheTensor) {
  const std::string dir = make_folder("hf_shape");
  edit_config(dir, [](json& j) { j["intermediate_size"] = 100; });
  expect_load_error(dir, {"model.safetensors", "mlp.gate_proj.weight", "[96, 64]", "[100, 64]"});
}

TEST(HfFolder, TruncatedWeightsNameTheFile) {
  const std::string dir = make_folder("hf_truncated");
  const std::string path = dir + "/model.safetensors";
  std::string bytes = test::read_file(path);
  bytes.resize(bytes.size() - 100);
  test::write_file(path, bytes);
  expect_load_error(dir, {path, "past the end of the file"});
}

TEST(HfFolder, BrokenShardIndexIsReported) {
  const std::string dir = make_folder("hf_bad_index", 20000);
  const std::string index_path = dir + "/model.safetensors.index.json";
  json index = json::parse(test::read_file(index_path));
  index["weight_map"]["model.norm.weight"] = "../../etc/passwd";
  test::write_file(index_path, index.dump());
  expect_load_error(dir, {index_path, "model.norm.weight", "not a file in the folder"});
  index["weight_map"]["model.norm.weight"] = "model-00099-of-00099.safetensors";
  test::write_file(index_path, index.dump());
  expect_load_error(dir, {index_path, "model-00099-of-00099.safetensors", "does not exist"});
  index.erase("weight_map");
  test::write_file(index_path, index.dump());
  expect_load_error(dir, {index_path, "weight_map"});
}

TEST(HfFolder, FolderWithoutWeightsOrConfigIsReported) {
  const std::string dir = test::scratch_dir("hf_empty");
  expect_load_error(dir, {dir, "config.json"});
  test::write_file(dir + "/config.json", test::read_file(test::shared_path("models/stories260K/hf/config.json")));
  expect_load_error(dir, {dir, "no model.safetensors"});
}

}  // namespace
}  // namespace llmwb
