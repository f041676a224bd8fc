// llmwb/errors.h — the engine's one error type.
//
// Every failure that reaches an API boundary is an llmwb::Error whose message names where
// it happened (a file, a tensor, a metadata key, a CLI flag, a request) and what was wrong,
// e.g. "model.gguf: tensor 'blk.0.attn_q.weight': data ends at byte 9120 past the end of
// the file (8192 bytes)". The per-token hot path never throws.
#pragma once

#include <stdexcept>
#include <string>

namespace llmwb {

class Error : public std::runtime_error {
 public:
  // `where` names the file, tensor, key or field; `what` says what is wrong.
  Error(const std::string& where, const std::string& what)
      : std::runtime_error(where.empty() ? what : where + ": " + what), where_(where) {}
  explicit Error(const std::string& what) : std::runtime_error(what) {}

  const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

}  // namespace llmwb
