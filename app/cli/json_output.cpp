#include "json_output.h"

#include "tokenizer/utf8.h"

namespace llmwb::cli {

std::string valid_utf8(const std::string& s, bool* replaced) {
  std::string out;
  out.reserve(s.size());
  bool any = false;
  for (size_t i = 0; i < s.size();) {
    const int k = utf8::classify(s.data() + i, s.size() - i);
    if (k > 0) {
      out.append(s, i, static_cast<size_t>(k));
      i += static_cast<size_t>(k);
    } else {
      // -k ill-formed bytes, or (k == 0) a truncated character at the end of the string.
      out += utf8::kReplacement;
      i = k < 0 ? i + static_cast<size_t>(-k) : s.size();
      any = true;
    }
  }
  if (replaced) *replaced = any;
  return out;
}

}  // namespace llmwb::cli
