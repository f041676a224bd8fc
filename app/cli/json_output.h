// json_output.h — JSON that never fails on the bytes it carries. Prompts, completions, stop
// strings and model metadata are bytes, not necessarily UTF-8, and nlohmann::json's dump()
// throws (type_error 316) on invalid UTF-8; these helpers replace each ill-formed sequence by
// U+FFFD (one per maximal subpart, Unicode §3.9) and let the caller say so in the object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace llmwb::cli {

// `s` with every ill-formed UTF-8 sequence replaced by U+FFFD; *replaced (if given) is set to
// whether anything was.
std::string valid_utf8(const std::string& s, bool* replaced = nullptr);

// dump() that replaces invalid UTF-8 instead of throwing: the backstop for any string that was
// not passed through valid_utf8().
template <class Json>
std::string dump_json(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Sets j[key] to `text` made valid, and j[key + "_utf8_replaced"] = true when bytes were replaced.
template <class Json>
void set_text(Json& j, const std::string& key, const std::string& text) {
  bool replaced = false;
  j[key] = valid_utf8(text, &replaced);
  if (replaced) j[key + "_utf8_replaced"] = true;
}

}  // namespace llmwb::cli
