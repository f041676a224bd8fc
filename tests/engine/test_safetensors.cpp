// Tests of the safetensors parser and writer: a spec-exact round trip, the reference file
// from Hugging Face, and every malformed-header case the parser must reject with a message
// that names the file and the tensor (or field).
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "llmwb/errors.h"
#include "memory/mapped_file.h"
#include "format/safetensors_file.h"
#include "format/safetensors_writer.h"
#include "support/loader_expectations.h"
#include "support/test_support.h"

namespace llmwb {
namespace {

const std::string kWhere = "bad.safetensors";

// 8-byte little-endian length + header + data, as a parse() input.
std::vector<uint8_t> file_bytes(const std::string& header, size_t data_bytes, uint64_t claimed_len = UINT64_MAX) {
  const uint64_t n = claimed_len == UINT64_MAX ? header.size() : claimed_len;
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(n >> (8 * i)));
  s += header;
  for (size_t i = 0; i < data_bytes; ++i) s.push_back(static_cast<char>(i * 7 + 1));
  return std::vector<uint8_t>(s.begin(), s.end());
}

// Expects parse() to throw an Error naming the file and every one of `parts`.
void expect_rejected(const std::vector<uint8_t>& bytes, std::vector<std::string> parts) {
  parts.push_back(kWhere);
  test::expect_error_naming([&] { SafetensorsFile::parse(bytes.data(), bytes.size(), kWhere); }, parts);
}

TEST(Safetensors, WriterOutputIsSpecExactAndParsesBack) {
  const std::string dir = test::scratch_dir("safetensors_writer");
  const std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f};
  std::vector<uint16_t> b(5);
  for (int i = 0; i < 5; ++i) b[i] = fp32_to_bf16(0.5f * static_cast<float>(i) - 1.0f);
  SafetensorsWriter w;
  w.set_metadata("format", "pt");
  w.add_tensor("a.weight", DType::F32, {2, 3}, a.data());
  w.add_tensor("b.weight", DType::BF16, {5}, b.data());
  const std::string path = dir + "/x.safetensors";
  w.write(path);

  const std::string bytes = test::read_file(path);
  ASSERT_EQ(bytes.size(), w.file_size());
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data section must start 8-byte aligned";
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.front(), '{');
  EXPECT_EQ(header.find_last_not_of(' '), header.find_last_of('}')) << "only spaces may pad the header";
  const auto j = nlohmann::json::parse(header);
  EXPECT_EQ(j["__metadata__"]["format"], "pt");
  EXPECT_EQ(j["a.weight"]["dtype"], "F32");
  EXPECT_EQ(j["a.weight"]["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(j["a.weight"]["data_offsets"], nlohmann::json({0, 24}));
  EXPECT_EQ(j["b.weight"]["dtype"], "BF16");
  EXPECT_EQ(j["b.weight"]["data_offsets"], nlohmann::json({24, 34}));
  EXPECT_EQ(bytes.size(), 8 + n + 34);
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + n, a.data(), 24), 0);

  MappedFile map(path);
  const SafetensorsFile f = SafetensorsFile::parse(map.data(), map.size(), path);
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "a.weight");
  EXPECT_EQ(f.tensors[1].name, "b.weight");
  EXPECT_EQ(f.tensors[1].dtype, DType::BF16);
  EXPECT_EQ(f.tensors[1].shape, std::vector<int64_t>({5}));
  EXPECT_EQ(std::memcmp(f.tensors[1].data, b.data(), 10), 0);
  EXPECT_EQ(f.metadata.at("format"), "pt");
}

TEST(Safetensors, WriterRefusesQuantizedTypes) {
  SafetensorsWriter w;
  const std::vector<uint8_t> q(34);
  EXPECT_THROW(w.add_tensor("q", DType::Q8_0, {32}, q.data()), Error);
}

TEST(Safetensors, ParsesTheHuggingFaceStories260KFile) {
  const std::string path = test::shared_path("models/stories260K/hf/model.safetensors");
  MappedFile map(path);
  const SafetensorsFile f = SafetensorsFile::parse(map.data(), map.size(), path);
  EXPECT_EQ(f.tensors.size(), 2u + 5u * 9u);   // embedding, final norm, 9 per layer
  EXPECT_EQ(f.metadata.at("format"), "pt");
  const TensorView* q = f.find("model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->shape, std::vector<int64_t>({64, 64}));
  EXPECT_EQ(q->nbytes, 64u * 64u * 4u);
  // Tensors come in data order and tile the data section.
  for (size_t i = 1; i < f.tensors.size(); ++i)
    EXPECT_EQ(f.tensors[i].data, f.tensors[i - 1].data + f.tensors[i - 1].nbytes);
  EXPECT_EQ(f.tensors.back().data + f.tensors.back().nbytes, map.data() + map.size());
}

TEST(Safetensors, RejectsAFileShorterThanTheLengthField) {
  const std::vector<uint8_t> b = {1, 0, 0};
  expect_rejected(b, {"too short"});
}

TEST(Safetensors, RejectsAHeaderLengthPastTheEndOfTheFile) {
  expect_rejected(file_bytes("{}", 0, 4096), {"header length 4096", "past the end"});
}

TEST(Safetensors, RejectsAHeaderThatIsNotJson) {
  expect_rejected(file_bytes("{\"a\": [1, 2", 0), {"not valid JSON"});
  expect_rejected(file_bytes("[1, 2]", 0), {"not a JSON object"});
}

TEST(Safetensors, RejectsAnUnsupportedDtypeNamingTheTensor) {
  expect_rejected(file_bytes(R"({"ids": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}})", 16),
                  {"'ids'", "I64", "not supported"});
  expect_rejected(file_bytes(R"({"w": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}})", 8),
                  {"'w'", "unknown dtype 'F33'"});
}

TEST(Safetensors, RejectsOffsetsPastTheEndOfTheFile) {
  expect_rejected(file_bytes(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8),
                  {"'w'", "past the end of the file"});
}

TEST(Safetensors, RejectsBeginAfterEnd) {
  expect_rejected(file_bytes(R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})", 8),
                  {"'w'", "begin 8 is after end 4"});
}

TEST(Safetensors, RejectsASizeThatDisagreesWithTheShape) {
  expect_rejected(file_bytes(R"({"w": {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 8]}})", 8),
                  {"'w'", "span 8 bytes", "needs 12"});
}

TEST(Safetensors, RejectsOverlappingTensors) {
  expect_rejected(file_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                 "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                             12),
                  {"'b'", "overlap", "'a'"});
}

TEST(Safetensors, RejectsHolesAndUndescribedTrailingBytes) {
  expect_rejected(file_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
                  {"'a'", "hole of 4 bytes"});
  expect_rejected(file_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 12),
                  {"8 bytes after the last tensor", "'a'"});
}

TEST(Safetensors, RejectsADuplicatedTensorName) {
  expect_rejected(file_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                 "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                             8),
                  {"'a'", "twice"});
}

TEST(Safetensors, RejectsMalformedEntries) {
  expect_rejected(file_bytes(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4),
                  {"'a'", "non-negative"});
  expect_rejected(file_bytes(R"({"a": {"dtype": "F32", "data_offsets": [0, 4]}})", 4), {"'a'", "\"shape\""});
  // 2^62 F32 elements are 2^64 bytes, which would wrap to 0 and "match" an empty span.
  expect_rejected(file_bytes(R"({"a": {"dtype": "F32", "shape": [4611686018427387904], "data_offsets": [0, 0]}})", 0),
                  {"'a'", "too large"});
  expect_rejected(file_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4),
                  {"'a'", "data_offsets"});
  expect_rejected(file_bytes(R"({"__metadata__": [1]})", 0), {"__metadata__"});
}

TEST(Safetensors, KeepsMetadataAndAcceptsAnEmptyFile) {
  const auto b = file_bytes(R"({"__metadata__": {"format": "pt", "note": "x"}})", 0);
  const SafetensorsFile f = SafetensorsFile::parse(b.data(), b.size(), kWhere);
  EXPECT_TRUE(f.tensors.empty());
  EXPECT_EQ(f.metadata.at("note"), "x");
}

}  // namespace
}  // namespace llmwb
