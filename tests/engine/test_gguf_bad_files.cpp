// test_gguf_bad_files.cpp — every way a GGUF file can be broken fails with an llmwb::Error
// that names the file, the key or tensor, and the problem. The bad files are stories260K.gguf
// with bytes patched, or small files written by GgufWriter.
#include <gtest/gtest.h>

#include <cstring>

#include "llmwb/errors.h"
#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "format/model_file.h"
#include "support/test_support.h"

namespace llmwb {
namespace {

std::string stories() {
  static const std::string bytes =
      test::read_file(test::shared_path("models/stories260K/stories260K.gguf"));
  return bytes;
}

// Offset just past the GGUF string `s` (u64 length + bytes) in the header.
size_t after_string(const std::string& bytes, const std::string& s) {
  std::string pattern(8, '\0');
  const uint64_t n = s.size();
  std::memcpy(pattern.data(), &n, 8);
  pattern += s;
  const size_t at = bytes.find(pattern);
  if (at == std::string::npos) throw std::runtime_error("string not in file: " + s);
  return at + pattern.size();
}

template <typename T>
void poke(std::string* bytes, size_t at, T v) {
  std::memcpy(bytes->data() + at, &v, sizeof v);
}

// Offsets inside the tensor info of `name`: n_dims, ne[0], ggml type, data offset.
struct InfoPos {
  size_t n_dims, ne0, type, offset;
};
InfoPos info_pos(const std::string& bytes, const std::string& name) {
  InfoPos p{};
  p.n_dims = after_string(bytes, name);
  uint32_t n_dims;
  std::memcpy(&n_dims, bytes.data() + p.n_dims, 4);
  p.ne0 = p.n_dims + 4;
  p.type = p.ne0 + 8 * n_dims;
  p.offset = p.type + 4;
  return p;
}

// Loads `bytes` from a file and returns the error message, checking it names the file.
std::string load_error(const std::string& test_name, const std::string& bytes) {
  const std::string path = test::scratch_dir("gguf_bad_" + test_name) + "/" + test_name + ".gguf";
  test::write_file(path, bytes);
  try {
    load_gguf(path);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << "message does not start with the file: " << msg;
    return msg;
  }
  ADD_FAILURE() << test_name << ": loaded without an error";
  return "";
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(GgufBadFiles, EmptyFile) {
  EXPECT_HAS(load_error("empty", ""), "file is empty");
}

TEST(GgufBadFiles, WrongMagic) {
  std::string b = stories();
  b[3] = 'X';
  const std::string msg = load_error("magic", b);
  EXPECT_HAS(msg, "not a GGUF file");
  EXPECT_HAS(msg, "47 47 55 58");
}

TEST(GgufBadFiles, TruncatedInTheHeader) {
  const std::string msg = load_error("trunc_header", stories().substr(0, 13));
  EXPECT_HAS(msg, "header: file is truncated");
}

TEST(GgufBadFiles, TruncatedInTheKeyValueSection) {
  const std::string b = stories();
  // Cut inside the f32 value of the last key (after its type).
  const size_t cut = after_string(b, "llama.attention.layer_norm_rms_epsilon") + 4 + 2;
  const std::string msg = load_error("trunc_kv", b.substr(0, cut));
  EXPECT_HAS(msg, "key 'llama.attention.layer_norm_rms_epsilon': file is truncated: 4 bytes needed at offset " +
                      std::to_string(cut - 2));
}

TEST(GgufBadFiles, TruncatedInTheTensorInfos) {
  const std::string b = stories();
  const InfoPos p = info_pos(b, "blk.0.attn_k.weight");
  const std::string msg = load_error("trunc_infos", b.substr(0, p.type + 2));
  EXPECT_HAS(msg, "tensor 'blk.0.attn_k.weight': file is truncated");
}

TEST(GgufBadFiles, TruncatedInTheData) {
  const std::string b = stories();
  const std::string msg = load_error("trunc_data", b.substr(0, b.size() - 100));
  EXPECT_HAS(msg, "tensor 'blk.4.ffn_norm.weight'");
  EXPECT_HAS(msg, "data ends at byte " + std::to_string(b.size()) + " past the end of the file (" +
                      std::to_string(b.size() - 100) + " bytes)");
}

TEST(GgufBadFiles, VersionOneAndFutureVersionsAreRejected) {
  for (uint32_t v : {1u, 4u, 77u}) {
    std::string b = stories();
    poke<uint32_t>(&b, 4, v);
    EXPECT_HAS(load_error("version" + std::to_string(v), b),
               "GGUF version " + std::to_string(v) + " is not supported");
  }
}

TEST(GgufBadFiles, BigEndianFileIsNamedAsSuch) {
  std::string b = stories();
  poke<uint32_t>(&b, 4, __builtin_bswap32(3u));
  EXPECT_HAS(load_error("big_endian", b), "big-endian");
}

TEST(GgufBadFiles, UnknownValueType) {
  std::string b = stories();
  poke<uint32_t>(&b, after_string(b, "general.name"), 13);
  const std::string msg = load_error("value_type", b);
  EXPECT_HAS(msg, "key 'general.name': unknown value type 13");
}

TEST(GgufBadFiles, UnknownArrayElementType) {
  std::string b = stories();
  poke<uint32_t>(&b, after_string(b, "tokenizer.ggml.scores") + 4, 99);
  EXPECT_HAS(load_error("elem_type", b), "key 'tokenizer.ggml.scores': unknown array element type 99");
}

TEST(GgufBadFiles, StringLengthPastTheEnd) {
  std::string b = stories();
  poke<uint64_t>(&b, after_string(b, "general.name") + 4, 1ull << 40);
  const std::string msg = load_error("string_len", b);
  EXPECT_HAS(msg, "key 'general.name'");
  EXPECT_HAS(msg, "string of 1099511627776 bytes");
  EXPECT_HAS(msg, "runs past the end of the file");
}

TEST(GgufBadFiles, AbsurdTensorCountDoesNotAllocate) {
  std::string b = stories();
  poke<uint64_t>(&b, 8, 1ull << 60);
  const std::string msg = load_error("n_tensors", b);
  EXPECT_HAS(msg, "n_tensors = 1152921504606846976 cannot fit");
}

TEST(GgufBadFiles, AbsurdKeyCountDoesNotAllocate) {
  std::string b = stories();
  poke<uint64_t>(&b, 16, ~0ull);
  EXPECT_HAS(load_error("n_kv", b), "n_kv = 18446744073709551615 cannot fit");
}

TEST(GgufBadFiles, AbsurdArrayCountDoesNotAllocate) {
  std::string b = stories();
  poke<uint64_t>(&b, after_string(b, "tokenizer.ggml.token_type") + 8, 1ull << 61);
  const std::string msg = load_error("array_count", b);
  EXPECT_HAS(msg, "key 'tokenizer.ggml.token_type'");
  EXPECT_HAS(msg, "element count 2305843009213693952 cannot fit");
}

TEST(GgufBadFiles, UnsupportedTensorTypeIsNamed) {
  std::string b = stories();
  poke<uint32_t>(&b, info_pos(b, "blk.0.attn_q.weight").type, 10);
  EXPECT_HAS(load_error("q5_k", b),
             "tensor 'blk.0.attn_q.weight' has type Q2_K, which llmwb does not support");
}

TEST(GgufBadFiles, TensorOffsetPastTheEnd) {
  std::string b = stories();
  poke<uint64_t>(&b, info_pos(b, "output_norm.weight").offset, 1ull << 40);
  const std::string msg = load_error("offset_past_end", b);
  EXPECT_HAS(msg, "tensor 'output_norm.weight'");
  EXPECT_HAS(msg, "past the end of the file (" + std::to_string(b.size()) + " bytes)");
}

TEST(GgufBadFiles, TensorOffsetNearTheTopOfTheRangeDoesNotWrapAround) {
  std::string b = stories();
  poke<uint64_t>(&b, info_pos(b, "output_norm.weight").offset, ~0ull - 31);
  EXPECT_HAS(load_error("offset_wrap", b), "tensor 'output_norm.weight': data offset");
}

TEST(GgufBadFiles, MisalignedTensorData) {
  std::string b = stories();
  const InfoPos p = info_pos(b, "blk.2.ffn_up.weight");
  uint64_t off;
  std::memcpy(&off, b.data() + p.offset, 8);
  poke<uint64_t>(&b, p.offset, off + 4);
  const std::string msg = load_error("misaligned", b);
  EXPECT_HAS(msg, "tensor 'blk.2.ffn_up.weight'");
  EXPECT_HAS(msg, "misaligned (not a multiple of the alignment 32)");
}

TEST(GgufBadFiles, OverlappingTensors) {
  std::string b = stories();
  uint64_t q_offset;
  std::memcpy(&q_offset, b.data() + info_pos(b, "blk.0.attn_q.weight").offset, 8);
  poke<uint64_t>(&b, info_pos(b, "blk.0.attn_k.weight").offset, q_offset + 32);
  const std::string msg = load_error("overlap", b);
  EXPECT_HAS(msg, "tensor 'blk.0.attn_k.weight'");
  EXPECT_HAS(msg, "overlaps tensor 'blk.0.attn_q.weight'");
}

TEST(GgufBadFiles, TooManyDimensions) {
  std::string b = stories();
  poke<uint32_t>(&b, info_pos(b, "token_embd.weight").n_dims, 5);
  EXPECT_HAS(load_error("n_dims", b), "tensor 'token_embd.weight' has 5 dimensions (1 to 4 supported)");
}

TEST(GgufBadFiles, ZeroDimensions) {
  std::string b = stories();
  poke<uint32_t>(&b, info_pos(b, "token_embd.weight").n_dims, 0);
  EXPECT_HAS(load_error("zero_dims", b), "tensor 'token_embd.weight' has 0 dimensions");
}

TEST(GgufBadFiles, ZeroSizedDimension) {
  std::string b = stories();
  poke<uint64_t>(&b, info_pos(b, "blk.1.attn_v.weight").ne0 + 8, 0);
  EXPECT_HAS(load_error("zero_dim", b), "tensor 'blk.1.attn_v.weight' has a zero dimension (ne = [64, 0])");
}

TEST(GgufBadFiles, DuplicateTensorName) {
  std::string b = stories();
  const size_t at = after_string(b, "blk.1.attn_q.weight") - std::strlen("blk.1.attn_q.weight");
  b[at + 4] = '0';   // blk.1.attn_q.weight -> blk.0.attn_q.weight
  const std::string msg = load_error("duplicate", b);
  EXPECT_HAS(msg, "tensor 'blk.0.attn_q.weight'");
  EXPECT_HAS(msg, "duplicate tensor name");
}

TEST(GgufBadFiles, ByteSizeThatDoesNotMatchTheShapeForTheType) {
  std::string b = stories();
  // ffn_down has ne0 = 172, not a multiple of Q8_0's 32-element blocks.
  poke<uint32_t>(&b, info_pos(b, "blk.3.ffn_down.weight").type, 8);
  const std::string msg = load_error("block_size", b);
  EXPECT_HAS(msg, "tensor 'blk.3.ffn_down.weight' of type Q8_0 has ne0 = 172");
  EXPECT_HAS(msg, "not a multiple of its block size 32");
}

TEST(GgufBadFiles, MissingRequiredKeyIsNamed) {
  std::string b = stories();
  b[after_string(b, "llama.block_count") - 1] = 'x';   // llama.block_count -> llama.block_counx
  EXPECT_HAS(load_error("missing_key", b), "missing required metadata key 'llama.block_count'");
}

TEST(GgufBadFiles, ArchitectureOtherThanLlama) {
  std::string b = stories();
  const size_t value = after_string(b, "general.architecture") + 4 + 8;
  std::memcpy(b.data() + value, "gemma", 5);
  const std::string msg = load_error("arch", b);
  EXPECT_HAS(msg, "key 'general.architecture' is 'gemma'");
  EXPECT_HAS(msg, "llama-family models only");
}

TEST(GgufBadFiles, DuplicateKey) {
  std::string b = stories();
  b[after_string(b, "tokenizer.ggml.eos_token_id") - 12] = 'b';   // -> bos_token_id, which comes first
  EXPECT_HAS(load_error("dup_key", b), "key 'tokenizer.ggml.bos_token_id': appears twice");
}

TEST(GgufBadFiles, KeyOfTheWrongTypeIsNamed) {
  const std::string path = test::scratch_dir("gguf_bad_key_type") + "/k.gguf";
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.set_u32("llama.context_length", 16);
  w.set_u32("llama.embedding_length", 8);
  w.set_str("llama.block_count", "five");
  w.write(path);
  try {
    load_gguf(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_HAS(msg, path + ": key 'llama.block_count' has type string, expected an integer");
  }
}

TEST(GgufBadFiles, TokenIdOutsideTheVocabulary) {
  std::string b = stories();
  poke<uint32_t>(&b, after_string(b, "tokenizer.ggml.eos_token_id") + 4, 512);
  EXPECT_HAS(load_error("eos", b), "key 'tokenizer.ggml.eos_token_id' = 512 is not a token id");
}

TEST(GgufBadFiles, ScoresOfADifferentLengthThanTheTokens) {
  std::string b = stories();
  // Shorten the scores array by one element and drop its last 4 bytes so the rest still parses.
  const size_t count_at = after_string(b, "tokenizer.ggml.scores") + 8;
  const uint64_t data_offset =
      GgufFile::parse(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "stories").data_offset;
  poke<uint64_t>(&b, count_at, 511);
  b.erase(count_at + 8 + 511 * 4, 4);
  b.insert(data_offset - 4, 4, '\0');   // longer padding keeps the data section in place
  const std::string msg = load_error("scores", b);
  EXPECT_HAS(msg, "key 'tokenizer.ggml.scores' has 511 entries for 512 tokens");
}

TEST(GgufBadFiles, AlignmentThatIsNotAPowerOfTwo) {
  const std::string path = test::scratch_dir("gguf_bad_alignment") + "/a.gguf";
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.write(path);
  std::string b = test::read_file(path);
  poke<uint32_t>(&b, after_string(b, "general.alignment") + 4, 48);
  EXPECT_HAS(load_error("alignment", b), "key 'general.alignment': alignment 48 is not a power of two");
}

TEST(GgufBadFiles, ParserRejectsArraysNestedTooDeep) {
  std::string b = "GGUF";
  auto put32 = [&](uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
  auto put64 = [&](uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); };
  put32(3);
  put64(0);
  put64(1);
  put64(1);
  b += "k";
  put32(9);   // ARRAY
  for (int i = 0; i < 100; ++i) {
    put32(9);   // of ARRAY
    put64(1);
  }
  try {
    GgufFile::parse(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "deep.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), "deep.gguf: key 'k': arrays nested more than");
  }
}

}  // namespace
}  // namespace llmwb
