#include "args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace llmwb::cli {

Args::Args(const std::vector<std::string>& argv, const std::vector<std::string>& value_flags,
           const std::vector<std::string>& bool_flags) {
  auto is_in = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    std::string name, value;
    bool has_value = false;
    if (a.rfind("--", 0) == 0 && a.size() > 2) {
      name = a.substr(2);
    } else if (a.size() == 2 && a[0] == '-' && a[1] != '-') {
      name = a.substr(1);
    } else {
      throw UsageError("unexpected argument '" + a + "'");
    }
    auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (is_in(value_flags, name)) {
      if (!has_value) {
        if (i + 1 >= argv.size()) throw UsageError("--" + name + " needs a value");
        value = argv[++i];
      }
      values_[name].push_back(value);
    } else if (is_in(bool_flags, name)) {
      if (has_value) throw UsageError("--" + name + " takes no value");
      values_[name].push_back("1");
    } else {
      throw UsageError("unknown flag '" + a + "'");
    }
  }
}

bool Args::has(const std::string& name) const { return values_.count(name) > 0; }

std::string Args::str(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second.back();
}

std::vector<std::string> Args::all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

static int64_t parse_int(const std::string& flag, const std::string& s) {
  if (s.empty()) throw UsageError("--" + flag + ": empty value, expected an integer");
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') throw UsageError("--" + flag + ": '" + s + "' is not an integer");
  return v;
}

int64_t Args::integer(const std::string& name, int64_t def, int64_t min, int64_t max) const {
  if (!has(name)) return def;
  int64_t v = parse_int(name, str(name));
  if (v < min || v > max)
    throw UsageError("--" + name + ": " + std::to_string(v) + " is out of range [" + std::to_string(min) +
                     ", " + std::to_string(max) + "]");
  return v;
}

double Args::real(const std::string& name, double def, double min, double max) const {
  if (!has(name)) return def;
  const std::string s = str(name);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || *end != '\0' || v != v)
    throw UsageError("--" + name + ": '" + s + "' is not a number");
  if (v < min || v > max)
    throw UsageError("--" + name + ": " + s + " is out of range [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
  return v;
}

std::optional<uint64_t> Args::u64(const std::string& name) const {
  if (!has(name)) return std::nullopt;
  const std::string s = str(name);
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || errno != 0 || *end != '\0')
    throw UsageError("--" + name + ": '" + s + "' is not a non-negative integer");
  return v;
}

std::vector<int64_t> Args::int_list(const std::string& name, const std::vector<int64_t>& def, int64_t min) const {
  if (!has(name)) return def;
  std::vector<int64_t> out;
  std::string s = str(name);
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    int64_t v = parse_int(name, item);
    if (v < min) throw UsageError("--" + name + ": " + item + " is below " + std::to_string(min));
    out.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

uint64_t Args::bytes(const std::string& name, uint64_t def) const {
  if (!has(name)) return def;
  const std::string given = str(name);
  std::string s = given;
  uint64_t mult = 1;
  if (!s.empty()) {
    char c = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
    if (c == 'K') mult = 1ull << 10;
    if (c == 'M') mult = 1ull << 20;
    if (c == 'G') mult = 1ull << 30;
    if (c == 'T') mult = 1ull << 40;
    if (mult != 1) s.pop_back();
    if (!s.empty() && (s.back() == 'i' || s.back() == 'I')) s.pop_back();
  }
  // Digits and one decimal point only: strtod alone would also take "inf", "nan", hex floats,
  // exponents and leading blanks or signs.
  const bool plain = !s.empty() && s.find_first_not_of("0123456789.") == std::string::npos &&
                     std::count(s.begin(), s.end(), '.') <= 1 && s != ".";
  if (!plain) throw UsageError("--" + name + ": '" + given + "' is not a size (e.g. 512M, 2G, 1048576)");
  const double v = std::strtod(s.c_str(), nullptr) * static_cast<double>(mult);
  // Below 2^63 bytes: every larger value would overflow the conversion (undefined behaviour)
  // and no machine has that much memory anyway.
  constexpr double kLimit = 9223372036854775808.0;   // 2^63
  if (!(v >= 1.0)) throw UsageError("--" + name + ": '" + given + "' is less than one byte");
  if (!(v < kLimit)) throw UsageError("--" + name + ": '" + given + "' is too large (the limit is 8 EiB, 2^63 bytes)");
  return static_cast<uint64_t>(v);
}

}  // namespace llmwb::cli
