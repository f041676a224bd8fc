#include "cpu_info.h"

#include <fstream>

namespace llmwb::cli {

namespace {
// The value after "key<tabs> : " on a line of /proc/cpuinfo, if the line is that key's.
bool field(const std::string& line, const std::string& key, std::string* value) {
  if (line.rfind(key, 0) != 0) return false;
  const size_t colon = line.find(':');
  if (colon == std::string::npos || line.find_first_not_of(" \t", key.size()) != colon) return false;
  const size_t start = line.find_first_not_of(' ', colon + 1);
  *value = start == std::string::npos ? "" : line.substr(start);
  return true;
}

int to_int(const std::string& v) {
  try {
    return std::stoi(v);
  } catch (const std::exception&) {
    return -1;
  }
}
}  // namespace

std::string CpuInfo::describe() const {
  if (family < 0 || model < 0) return name;
  return name + " (family " + std::to_string(family) + " model " + std::to_string(model) + ")";
}

void CpuInfo::add_to(nlohmann::json& j) const {
  j["cpu"] = name;
  if (family >= 0) j["cpu_family"] = family;
  if (model >= 0) j["cpu_model"] = model;
}

CpuInfo cpu_info() {
  CpuInfo c;
  std::ifstream f("/proc/cpuinfo");
  std::string line, v;
  bool have_name = false, have_family = false, have_model = false;
  while (std::getline(f, line) && !(have_name && have_family && have_model)) {
    if (!have_name && field(line, "model name", &v)) {
      c.name = v;
      have_name = true;
    } else if (!have_family && field(line, "cpu family", &v)) {
      c.family = to_int(v);
      have_family = true;
    } else if (!have_model && field(line, "model", &v)) {
      c.model = to_int(v);
      have_model = true;
    }
  }
  return c;
}

}  // namespace llmwb::cli
