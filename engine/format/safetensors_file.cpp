// safetensors_file.cpp — a strict parser for the safetensors header.
//
// The checks follow the reference implementation (huggingface/safetensors, Metadata::validate):
// header length within the file and below 100 MB, a JSON object, unique names, known dtypes,
// begin <= end, byte size == product(shape) * element size, and the tensors tiling the data
// section from 0 to its end without overlap or holes.
#include "format/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "llmwb/errors.h"

namespace llmwb {

namespace {

using nlohmann::json;

// The reference implementation refuses larger headers; so do we, which also keeps a fuzzed
// length from making us parse gigabytes of garbage.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct Entry {
  TensorView view;
  uint64_t begin = 0, end = 0;
};

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Element size for the dtypes we load; 0 with *known = true for types the format defines but
// the engine does not compute with (named in the error), *known = false for strings that are
// not safetensors dtypes at all.
int element_bytes(const std::string& s, DType* out, bool* known) {
  *known = true;
  if (s == "F32") { *out = DType::F32; return 4; }
  if (s == "F16") { *out = DType::F16; return 2; }
  if (s == "BF16") { *out = DType::BF16; return 2; }
  static const std::set<std::string> kOther = {"F64", "I64", "I32", "I16", "I8", "U64", "U32", "U16",
                                               "U8", "BOOL", "F8_E4M3", "F8_E5M2", "F8_E8M0",
                                               "F6_E2M3", "F6_E3M2", "F4", "C64"};
  *known = kOther.count(s) > 0;
  return 0;
}

uint64_t json_u64(const json& v, const std::string& where, const std::string& what) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    throw Error(where, what + " must be a non-negative integer, got " + v.dump());
  return v.get<uint64_t>();
}

Entry parse_entry(const std::string& name, const json& v, uint64_t data_size, uint64_t data_offset,
                  const std::string& where) {
  const std::string t = "tensor '" + name + "'";
  if (!v.is_object()) throw Error(where, t + ": header entry is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) throw Error(where, t + ": header entry has no \"" + key + "\"");

  const json& jd = v["dtype"];
  if (!jd.is_string()) throw Error(where, t + ": \"dtype\" is not a string");
  const std::string ds = jd.get<std::string>();
  Entry e;
  bool known = false;
  const int esize = element_bytes(ds, &e.view.dtype, &known);
  if (!known) throw Error(where, t + ": unknown dtype '" + ds + "'");
  if (esize == 0) throw Error(where, t + ": dtype " + ds + " is not supported (F32, F16 and BF16 are)");

  const json& js = v["shape"];
  if (!js.is_array()) throw Error(where, t + ": \"shape\" is not an array");
  uint64_t numel = 1;
  for (const auto& d : js) {
    const uint64_t n = json_u64(d, where, t + ": shape dimension");
    // No file holds 2^60 elements; stopping there keeps numel * element size (<= 8) from
    // wrapping around to a small byte count that would pass the size check.
    if (n != 0 && numel > (uint64_t{1} << 60) / n) throw Error(where, t + ": shape " + js.dump() + " is too large");
    numel *= n;
    e.view.shape.push_back(static_cast<int64_t>(n));
  }

  const json& jo = v["data_offsets"];
  if (!jo.is_array() || jo.size() != 2) throw Error(where, t + ": \"data_offsets\" is not [begin, end]");
  e.begin = json_u64(jo[0], where, t + ": data_offsets begin");
  e.end = json_u64(jo[1], where, t + ": data_offsets end");
  if (e.begin > e.end)
    throw Error(where, t + ": data_offsets begin " + std::to_string(e.begin) + " is after end " + std::to_string(e.end));
  if (e.end > data_size)
    throw Error(where, t + ": data ends at byte " + std::to_string(data_offset + e.end) +
                           " (data_offsets end " + std::to_string(e.end) + "), past the end of the file (" +
                           std::to_string(data_offset + data_size) + " bytes)");
  const uint64_t expect = numel * static_cast<uint64_t>(esize);
  if (e.end - e.begin != expect)
    throw Error(where, t + ": data_offsets span " + std::to_string(e.end - e.begin) + " bytes but " + ds +
                           " shape " + js.dump() + " needs " + std::to_string(expect));
  e.view.name = name;
  e.view.nbytes = expect;
  return e;
}

}  // namespace

const char* safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    default: return nullptr;
  }
}

SafetensorsFile SafetensorsFile::parse(const uint8_t* data, uint64_t size, const std::string& where) {
  if (size < 8)
    throw Error(where, "file is " + std::to_string(size) + " bytes, too short for the 8-byte safetensors header length");
  const uint64_t n = read_u64_le(data);
  if (n > kMaxHeaderBytes) throw Error(where, "header length " + std::to_string(n) + " exceeds the 100 MB limit");
  if (n > size - 8)
    throw Error(where, "header length " + std::to_string(n) + " runs past the end of the file (" +
                           std::to_string(size) + " bytes)");

  // Parse with a callback that sees every key of the top-level object, because a JSON object
  // with a repeated key silently keeps one value, and a duplicated tensor name must be an error.
  std::set<std::string> seen;
  std::string duplicate;
  auto cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::key && depth == 1) {
      const std::string k = parsed.get<std::string>();
      if (!seen.insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  const char* hb = reinterpret_cast<const char*>(data + 8);
  json header = json::parse(hb, hb + n, cb, /*allow_exceptions=*/false);
  if (header.is_discarded()) throw Error(where, "header (" + std::to_string(n) + " bytes at byte 8) is not valid JSON");
  if (!header.is_object()) throw Error(where, "header is not a JSON object");
  if (!duplicate.empty()) throw Error(where, "tensor '" + duplicate + "' appears twice in the header");

  SafetensorsFile f;
  f.data_offset = 8 + n;
  const uint64_t data_size = size - f.data_offset;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) throw Error(where, "\"__metadata__\" is not a JSON object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m)
        f.metadata[m.key()] = m.value().is_string() ? m.value().get<std::string>() : m.value().dump();
      continue;
    }
    entries.push_back(parse_entry(it.key(), it.value(), data_size, f.data_offset, where));
  }

  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  const std::string* prev = nullptr;
  for (auto& e : entries) {
    if (e.begin < pos)
      throw Error(where, "tensor '" + e.view.name + "': data_offsets [" + std::to_string(e.begin) + ", " +
                             std::to_string(e.end) + "] overlap tensor '" + *prev + "' (which ends at " +
                             std::to_string(pos) + ")");
    if (e.begin > pos)
      throw Error(where, "tensor '" + e.view.name + "': data starts at " + std::to_string(e.begin) + " leaving a hole of " +
                             std::to_string(e.begin - pos) + " bytes after " +
                             (prev ? "tensor '" + *prev + "'" : std::string("the header")));
    pos = e.end;
    prev = &e.view.name;
    e.view.data = data + f.data_offset + e.begin;
    f.tensors.push_back(e.view);
  }
  if (pos != data_size)
    throw Error(where, std::to_string(data_size - pos) + " bytes after the last tensor" +
                           (prev ? " ('" + *prev + "')" : std::string()) + " are not described by the header");
  return f;
}

const TensorView* SafetensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace llmwb
