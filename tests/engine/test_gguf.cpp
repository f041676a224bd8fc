// test_gguf.cpp — the GGUF parser, loader and writer on real and generated files.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "llmwb/errors.h"
#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "format/model_file.h"
#include "support/test_support.h"

namespace llmwb {
namespace {

const std::string kStories = "models/stories260K/stories260K.gguf";

GgufFile parse_bytes(const std::string& bytes, const std::string& where) {
  return GgufFile::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), where);
}

// Little-endian GGUF bytes assembled by hand from the spec, independent of GgufWriter.
struct Bytes {
  std::string s;
  template <typename T>
  Bytes& put(T v) {
    s.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Bytes& str(const std::string& v) {
    put<uint64_t>(v.size());
    s += v;
    return *this;
  }
  Bytes& type(GgufType t) { return put<uint32_t>(static_cast<uint32_t>(t)); }
  Bytes& pad(size_t align) {
    s.resize((s.size() + align - 1) / align * align, '\0');
    return *this;
  }
};

TEST(Gguf, Stories260KLoadsWithItsConfigTensorsAndTokenizer) {
  const std::string path = test::shared_path(kStories);
  auto m = load_gguf(path);
  EXPECT_EQ(m->format, "gguf");
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_GT(c.max_seq_len, 0);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.rope_layout, RopeLayout::Interleaved);
  EXPECT_EQ(c.bos_id, 1);
  EXPECT_EQ(c.eos_id, 2);
  // llama.cpp's llama2.c converter writes output.weight even for a shared classifier.
  EXPECT_EQ(c.tied_embeddings, m->find("output.weight") == nullptr);

  const int64_t dim = 64, hidden = 172, vocab = 512, q = 8 * 8, kv = 4 * 8;
  std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"token_embd.weight", {vocab, dim}}, {"output_norm.weight", {dim}}};
  for (int l = 0; l < 5; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    expected.push_back({b + "attn_norm.weight", {dim}});
    expected.push_back({b + "ffn_norm.weight", {dim}});
    expected.push_back({b + "attn_q.weight", {q, dim}});
    expected.push_back({b + "attn_k.weight", {kv, dim}});
    expected.push_back({b + "attn_v.weight", {kv, dim}});
    expected.push_back({b + "attn_output.weight", {dim, q}});
    expected.push_back({b + "ffn_gate.weight", {hidden, dim}});
    expected.push_back({b + "ffn_up.weight", {hidden, dim}});
    expected.push_back({b + "ffn_down.weight", {dim, hidden}});
  }
  for (const auto& [name, shape] : expected) {
    const TensorView& t = m->get(name);
    EXPECT_EQ(t.shape, shape) << name;
    EXPECT_EQ(t.dtype, DType::F32) << name;
    EXPECT_EQ(t.nbytes, static_cast<uint64_t>(t.numel()) * 4) << name;
  }

  const TokenizerData& tok = m->tokenizer;
  EXPECT_EQ(tok.model, "llama");
  ASSERT_EQ(tok.pieces.size(), 512u);
  EXPECT_EQ(tok.scores.size(), 512u);
  EXPECT_EQ(tok.types.size(), 512u);
  EXPECT_EQ(tok.pieces[1], "<s>");
  EXPECT_EQ(tok.pieces[2], "</s>");
  EXPECT_EQ(tok.types[0], 2);   // <unk> is UNKNOWN
  EXPECT_EQ(tok.types[1], 3);   // <s> is CONTROL
  EXPECT_EQ(tok.bos_id, 1);
  EXPECT_EQ(tok.eos_id, 2);
  EXPECT_EQ(tok.unk_id, 0);
  EXPECT_EQ(tok.pad_id, -1);   // stored as u32 0xFFFFFFFF

  EXPECT_EQ(m->metadata.at("general.architecture"), "llama");
  EXPECT_EQ(m->metadata.at("tokenizer.ggml.tokens"), "[array of 512 string]");
  EXPECT_EQ(m->metadata.at("llama.embedding_length"), "64");
}

TEST(Gguf, Stories260KEmbeddingEqualsTheLlama2cCheckpointBytes) {
  auto m = load_gguf(test::shared_path(kStories));
  // stories260K.bin: 7 int32 header, then token_embedding_table [vocab][dim] float32 —
  // the same row-major layout as token_embd.weight {vocab, dim}.
  const std::string bin = test::read_file(test::shared_path("models/stories260K/stories260K.bin"));
  const TensorView& e = m->get("token_embd.weight");
  ASSERT_GE(bin.size(), 28 + e.nbytes);
  EXPECT_EQ(std::memcmp(bin.data() + 28, e.data, e.nbytes), 0);
}

TEST(Gguf, Stories260KDataSectionIsAlignedAndEndsAtTheFileEnd) {
  const std::string bytes = test::read_file(test::shared_path(kStories));
  const GgufFile g = parse_bytes(bytes, "stories");
  EXPECT_EQ(g.version, 3u);
  EXPECT_EQ(g.alignment, 32u);
  EXPECT_EQ(g.data_offset % 32, 0u);
  ASSERT_EQ(g.tensors.size(), 48u);
  uint64_t end = 0;
  for (const GgufTensorInfo& t : g.tensors) {
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
    end = std::max(end, g.data_offset + t.offset + t.nbytes);
  }
  EXPECT_EQ(end, bytes.size());
}

TEST(Gguf, Version2FilesReadLikeVersion3) {
  // v2 differs from v3 only in that v3 may also be big-endian; the layout is the same.
  std::string bytes = test::read_file(test::shared_path(kStories));
  bytes[4] = 2;
  const std::string path = test::scratch_dir("gguf_v2") + "/v2.gguf";
  test::write_file(path, bytes);
  auto m = load_gguf(path);
  EXPECT_EQ(m->config.dim, 64);
  EXPECT_EQ(m->tensors.size(), 48u);
}

TEST(Gguf, LoadModelFileDetectsGgufAndReportsProgress) {
  std::vector<double> fractions;
  auto m = load_model_file(test::shared_path(kStories), [&](double f, const std::string&) {
    fractions.push_back(f);
    return true;
  });
  EXPECT_EQ(m->format, "gguf");
  ASSERT_GE(fractions.size(), 2u);
  EXPECT_EQ(fractions.front(), 0.0);
  EXPECT_EQ(fractions.back(), 1.0);
}

TEST(Gguf, LoadModelFileNamesAMissingPath) {
  const std::string path = test::scratch_dir("gguf_missing") + "/nope.gguf";
  try {
    load_model_file(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
  }
}

TEST(Gguf, LoadModelFileStopsWhenProgressCancels) {
  EXPECT_THROW(load_model_file(test::shared_path(kStories), [](double, const std::string&) { return false; }),
               Error);
}

TEST(Gguf, ParserReadsEveryValueTypeIncludingNestedArrays) {
  Bytes b;
  b.s = "GGUF";
  b.put<uint32_t>(3).put<uint64_t>(0).put<uint64_t>(16);
  b.str("u8").type(GgufType::U8).put<uint8_t>(200);
  b.str("i8").type(GgufType::I8).put<int8_t>(-100);
  b.str("u16").type(GgufType::U16).put<uint16_t>(60000);
  b.str("i16").type(GgufType::I16).put<int16_t>(-30000);
  b.str("u32").type(GgufType::U32).put<uint32_t>(4000000000u);
  b.str("i32").type(GgufType::I32).put<int32_t>(-2000000000);
  b.str("f32").type(GgufType::F32).put<float>(0.15625f);
  b.str("bool").type(GgufType::BOOL).put<uint8_t>(1);
  b.str("string").type(GgufType::STRING).str("h\xc3\xa9llo");
  b.str("u64").type(GgufType::U64).put<uint64_t>(18000000000000000000ull);
  b.str("i64").type(GgufType::I64).put<int64_t>(-9000000000000000000ll);
  b.str("f64").type(GgufType::F64).put<double>(-2.5e300);
  b.str("arr.i16").type(GgufType::ARRAY).type(GgufType::I16).put<uint64_t>(2).put<int16_t>(-1).put<int16_t>(7);
  b.str("arr.f64").type(GgufType::ARRAY).type(GgufType::F64).put<uint64_t>(1).put<double>(1.25);
  b.str("arr.str").type(GgufType::ARRAY).type(GgufType::STRING).put<uint64_t>(2).str("a").str("");
  // [[1, 2], [3]] as u8 arrays inside an array.
  b.str("arr.nested").type(GgufType::ARRAY).type(GgufType::ARRAY).put<uint64_t>(2);
  b.type(GgufType::U8).put<uint64_t>(2).put<uint8_t>(1).put<uint8_t>(2);
  b.type(GgufType::U8).put<uint64_t>(1).put<uint8_t>(3);

  const GgufFile g = parse_bytes(b.s, "values");
  ASSERT_EQ(g.kvs.size(), 16u);
  EXPECT_EQ(g.kvs[0].first, "u8");
  EXPECT_EQ(g.find("u8")->as_u64(), 200u);
  EXPECT_EQ(g.find("i8")->as_i64(), -100);
  EXPECT_EQ(g.find("u16")->as_u64(), 60000u);
  EXPECT_EQ(g.find("i16")->as_i64(), -30000);
  EXPECT_EQ(g.find("u32")->as_u64(), 4000000000u);
  EXPECT_EQ(g.find("i32")->as_i64(), -2000000000);
  EXPECT_EQ(g.find("f32")->f, 0.15625);
  EXPECT_EQ(g.find("bool")->to_string(), "true");
  EXPECT_EQ(g.find("string")->str, "h\xc3\xa9llo");
  EXPECT_EQ(g.find("u64")->as_u64(), 18000000000000000000ull);
  EXPECT_EQ(g.find("i64")->as_i64(), -9000000000000000000ll);
  EXPECT_EQ(g.find("f64")->f, -2.5e300);
  EXPECT_EQ(g.find("arr.i16")->elem_type, GgufType::I16);
  EXPECT_EQ(g.find("arr.i16")->ints, (std::vector<uint64_t>{static_cast<uint64_t>(-1), 7}));
  EXPECT_EQ(g.find("arr.f64")->floats, std::vector<double>{1.25});
  EXPECT_EQ(g.find("arr.str")->strings, (std::vector<std::string>{"a", ""}));
  const GgufValue& nested = *g.find("arr.nested");
  ASSERT_EQ(nested.arrays.size(), 2u);
  EXPECT_EQ(nested.arrays[0].ints, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(nested.arrays[1].ints, std::vector<uint64_t>{3});
  EXPECT_EQ(nested.to_string(), "[array of 2 array]");
  EXPECT_EQ(g.find("arr.str")->to_string(), "[array of 2 string]");
  EXPECT_TRUE(g.tensors.empty());
}

TEST(Gguf, ParserHonoursANonDefaultAlignment) {
  Bytes b;
  b.s = "GGUF";
  b.put<uint32_t>(3).put<uint64_t>(2).put<uint64_t>(1);
  b.str("general.alignment").type(GgufType::U32).put<uint32_t>(64);
  b.str("a").put<uint32_t>(1).put<uint64_t>(4).put<uint32_t>(0).put<uint64_t>(0);
  b.str("b").put<uint32_t>(1).put<uint64_t>(2).put<uint32_t>(1).put<uint64_t>(64);
  const size_t header = b.s.size();
  b.pad(64);
  b.s.append(64 + 4, '\x01');
  const GgufFile g = parse_bytes(b.s, "align64");
  EXPECT_EQ(g.alignment, 64u);
  EXPECT_EQ(g.data_offset, (header + 63) / 64 * 64);
  ASSERT_EQ(g.tensors.size(), 2u);
  EXPECT_EQ(g.tensors[1].dtype, DType::F16);
  EXPECT_EQ(g.tensors[1].nbytes, 4u);
  // With the default alignment of 32 the same offsets would be read from a different place;
  // an offset that is a multiple of 32 but not of 64 is misaligned here.
  Bytes bad = b;
  const size_t off = bad.s.find(std::string("\x40\0\0\0\0\0\0\0", 8), header - 8);
  ASSERT_EQ(off, header - 8);
  bad.s[off] = 32;
  EXPECT_THROW(parse_bytes(bad.s, "align64"), Error);
}

TEST(Gguf, WriterOutputMatchesTheSpecByteForByte) {
  const std::string dir = test::scratch_dir("gguf_spec_bytes");
  const float w[3] = {1.0f, -2.0f, 0.5f};
  GgufWriter wr;
  wr.set_str("general.architecture", "llama");
  wr.add_tensor("w", DType::F32, {3}, w);
  wr.add_tensor("v", DType::F32, {1, 2}, w);
  wr.write(dir + "/t.gguf");

  Bytes b;
  b.s = "GGUF";
  b.put<uint32_t>(3).put<uint64_t>(2).put<uint64_t>(2);
  b.str("general.architecture").type(GgufType::STRING).str("llama");
  b.str("general.alignment").type(GgufType::U32).put<uint32_t>(32);
  b.str("w").put<uint32_t>(1).put<uint64_t>(3).put<uint32_t>(0).put<uint64_t>(0);
  b.str("v").put<uint32_t>(2).put<uint64_t>(2).put<uint64_t>(1).put<uint32_t>(0).put<uint64_t>(32);
  b.pad(32);
  b.put(w[0]).put(w[1]).put(w[2]).pad(32);
  b.put(w[0]).put(w[1]).pad(32);
  EXPECT_EQ(test::read_file(dir + "/t.gguf"), b.s);
}

TEST(Gguf, WriterRoundTripKeepsEveryValueAndTensor) {
  const std::string path = test::scratch_dir("gguf_round_trip") + "/rt.gguf";
  std::mt19937 rng(1234);
  auto random_bytes = [&](DType t, const std::vector<int64_t>& shape) {
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
    std::vector<uint8_t> v(dtype_row_bytes(t, shape.back()) * rows);
    for (auto& x : v) x = static_cast<uint8_t>(rng());
    return v;
  };
  struct T {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<T> ts = {
      {"f32.odd", DType::F32, {3, 5}, {}},        {"f16.vec", DType::F16, {7}, {}},
      {"bf16.3d", DType::BF16, {3, 1, 5}, {}},    {"q8_0", DType::Q8_0, {5, 64}, {}},
      {"q4_0.4d", DType::Q4_0, {2, 1, 3, 32}, {}}, {"f32.big", DType::F32, {33, 9}, {}},
  };
  for (T& t : ts) t.bytes = random_bytes(t.dtype, t.shape);

  GgufWriter w;
  w.set_str("k.str", "value ✓");
  w.set_u32("k.u32", 4000000000u);
  w.set_i32("k.i32", -7);
  w.set_u64("k.u64", 1ull << 40);
  w.set_f32("k.f32", 3.14159f);
  w.set_bool("k.bool", false);
  w.set_str_array("k.strs", {"<s>", "", "▁the"});
  w.set_f32_array("k.f32s", {0.5f, -1e-3f});
  w.set_i32_array("k.i32s", {1, -2, 3});
  w.set_i32("k.i32", -8);   // a repeated key replaces the value and keeps its place
  for (size_t i = 0; i < ts.size(); ++i) {
    if (i % 2 == 0) {
      w.add_tensor(ts[i].name, ts[i].dtype, ts[i].shape, ts[i].bytes.data());
    } else {
      const std::vector<uint8_t>* src = &ts[i].bytes;
      w.add_tensor(ts[i].name, ts[i].dtype, ts[i].shape,
                   [src](uint8_t* dst) { std::memcpy(dst, src->data(), src->size()); });
    }
  }
  w.write(path);

  const std::string bytes = test::read_file(path);
  const GgufFile g = parse_bytes(bytes, path);
  const std::vector<std::string> keys = {"k.str", "k.u32",  "k.i32",  "k.u64",  "k.f32",
                                         "k.bool", "k.strs", "k.f32s", "k.i32s", "general.alignment"};
  ASSERT_EQ(g.kvs.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(g.kvs[i].first, keys[i]);
  EXPECT_EQ(g.find("k.str")->str, "value ✓");
  EXPECT_EQ(g.find("k.u32")->type, GgufType::U32);
  EXPECT_EQ(g.find("k.u32")->as_u64(), 4000000000u);
  EXPECT_EQ(g.find("k.i32")->type, GgufType::I32);
  EXPECT_EQ(g.find("k.i32")->as_i64(), -8);
  EXPECT_EQ(g.find("k.u64")->type, GgufType::U64);
  EXPECT_EQ(g.find("k.u64")->as_u64(), 1ull << 40);
  EXPECT_EQ(g.find("k.f32")->type, GgufType::F32);
  EXPECT_EQ(static_cast<float>(g.find("k.f32")->f), 3.14159f);
  EXPECT_EQ(g.find("k.bool")->type, GgufType::BOOL);
  EXPECT_EQ(g.find("k.bool")->bits, 0u);
  EXPECT_EQ(g.find("k.strs")->strings, (std::vector<std::string>{"<s>", "", "▁the"}));
  EXPECT_EQ(g.find("k.f32s")->elem_type, GgufType::F32);
  EXPECT_EQ(g.find("k.f32s")->floats, (std::vector<double>{0.5f, -1e-3f}));
  EXPECT_EQ(g.find("k.i32s")->elem_type, GgufType::I32);
  EXPECT_EQ(g.find("k.i32s")->ints,
            (std::vector<uint64_t>{1, static_cast<uint64_t>(int64_t{-2}), 3}));
  EXPECT_EQ(g.alignment, 32u);

  ASSERT_EQ(g.tensors.size(), ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    const GgufTensorInfo& ti = g.tensors[i];
    EXPECT_EQ(ti.name, ts[i].name);
    EXPECT_EQ(ti.dtype, ts[i].dtype) << ti.name;
    EXPECT_EQ(ti.ggml_type, dtype_to_gguf(ts[i].dtype)) << ti.name;
    std::vector<int64_t> shape(ti.ne.rbegin(), ti.ne.rend());
    EXPECT_EQ(shape, ts[i].shape) << ti.name;
    EXPECT_EQ((g.data_offset + ti.offset) % 32, 0u) << ti.name;
    ASSERT_EQ(ti.nbytes, ts[i].bytes.size()) << ti.name;
    EXPECT_EQ(std::memcmp(bytes.data() + g.data_offset + ti.offset, ts[i].bytes.data(), ti.nbytes), 0)
        << ti.name;
  }
}

// A tiny llama model written with GgufWriter (random weights, tied head).
void write_tiny_llama(const std::string& path, const std::vector<float>& weights) {
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.set_str("general.name", "tiny");
  w.set_u32("llama.context_length", 64);
  w.set_u32("llama.embedding_length", 32);
  w.set_u32("llama.block_count", 1);
  w.set_u32("llama.feed_forward_length", 48);
  w.set_u32("llama.attention.head_count", 4);
  w.set_f32("llama.rope.freq_base", 500000.0f);
  w.set_str("llama.rope.scaling.type", "linear");
  w.set_f32("llama.rope.scaling.factor", 2.0f);
  w.set_str("tokenizer.ggml.model", "llama");
  w.set_str_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a", "b", "c"});
  w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0, -1, -2, -3});
  w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1});
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_str("tokenizer.chat_template", "{{ messages }}");
  const float* p = weights.data();
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    w.add_tensor(name, DType::F32, shape, p);
  };
  add("token_embd.weight", {6, 32});
  add("output_norm.weight", {32});
  add("blk.0.attn_norm.weight", {32});
  add("blk.0.ffn_norm.weight", {32});
  add("blk.0.attn_q.weight", {32, 32});
  add("blk.0.attn_k.weight", {32, 32});
  add("blk.0.attn_v.weight", {32, 32});
  add("blk.0.attn_output.weight", {32, 32});
  add("blk.0.ffn_gate.weight", {48, 32});
  add("blk.0.ffn_up.weight", {48, 32});
  add("blk.0.ffn_down.weight", {32, 48});
  w.write(path);
}

TEST(Gguf, WrittenLlamaLoadsWithDefaultsAndTokenizerFields) {
  const std::string path = test::scratch_dir("gguf_tiny") + "/tiny.gguf";
  std::vector<float> weights(48 * 32);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i) * 0.25f;
  write_tiny_llama(path, weights);

  auto m = load_model_file(path);
  EXPECT_EQ(m->format, "gguf");
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.name, "tiny");
  EXPECT_EQ(c.n_kv_heads, 4);   // head_count_kv absent: defaults to head_count
  EXPECT_EQ(c.head_dim, 8);     // rope.dimension_count absent: dim / heads
  EXPECT_EQ(c.vocab_size, 6);   // from the token list
  EXPECT_EQ(c.max_seq_len, 64);
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.0f);
  EXPECT_EQ(c.rope_scaling.type, "linear");
  EXPECT_FLOAT_EQ(c.rope_scaling.factor, 2.0f);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(m->tokenizer.pad_id, -1);
  EXPECT_FALSE(m->tokenizer.add_bos);
  EXPECT_EQ(m->tokenizer.chat_template, "{{ messages }}");
  EXPECT_EQ(m->tokenizer.types, (std::vector<int32_t>{2, 3, 3, 1, 1, 1}));
  EXPECT_EQ(m->tokenizer.scores, (std::vector<float>{0, 0, 0, -1, -2, -3}));
  const TensorView& down = m->get("blk.0.ffn_down.weight");
  EXPECT_EQ(down.shape, (std::vector<int64_t>{32, 48}));
  EXPECT_EQ(std::memcmp(down.data, weights.data(), down.nbytes), 0);
  EXPECT_EQ(m->find("output.weight"), nullptr);
  EXPECT_THROW(m->get("output.weight"), Error);
}

TEST(Gguf, WriterRejectsABadShapeNamingTheTensor) {
  GgufWriter w;
  try {
    w.add_tensor("blk.0.q", DType::Q8_0, {4, 33}, static_cast<const void*>(nullptr));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'blk.0.q'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("33 columns"), std::string::npos) << e.what();
  }
  EXPECT_THROW(w.add_tensor("z", DType::F32, {0, 4}, static_cast<const void*>(nullptr)), Error);
  EXPECT_THROW(w.add_tensor("d", DType::F32, {1, 1, 1, 1, 1}, static_cast<const void*>(nullptr)), Error);
}

}  // namespace
}  // namespace llmwb
