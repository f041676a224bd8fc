// args.h — a strict flag parser for llmwb-cli: every flag must be declared, every value must
// parse, and anything else is a UsageError naming the flag and what is wrong.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmwb::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // `value_flags` take a value (--name VALUE or --name=VALUE, may repeat); `bool_flags` do not.
  // Names are given without the leading dashes; single-letter names are also accepted with one
  // dash (-p 128). Throws UsageError for unknown flags, missing values and stray arguments.
  Args(const std::vector<std::string>& argv, const std::vector<std::string>& value_flags,
       const std::vector<std::string>& bool_flags);

  bool has(const std::string& name) const;
  bool flag(const std::string& name) const { return has(name); }
  // The last value given, or the default.
  std::string str(const std::string& name, const std::string& def = "") const;
  std::vector<std::string> all(const std::string& name) const;
  // Typed getters throw UsageError("--name: 'abc' is not an integer") etc.
  int64_t integer(const std::string& name, int64_t def, int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  double real(const std::string& name, double def, double min = -1e300, double max = 1e300) const;
  std::optional<uint64_t> u64(const std::string& name) const;
  // Comma-separated integers: -p 128,512.
  std::vector<int64_t> int_list(const std::string& name, const std::vector<int64_t>& def, int64_t min = 1) const;
  // Sizes like 512M, 2G, 1T, 1048576: at least one byte and below 2^63 bytes.
  uint64_t bytes(const std::string& name, uint64_t def) const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
};

}  // namespace llmwb::cli
