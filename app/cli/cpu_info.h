// cpu_info.h — which CPU a measurement ran on, for the benchmarks' JSON and tables: the model
// name /proc/cpuinfo gives and the family / model numbers that tell microarchitectures apart
// where the name does not (a KVM guest's "AMD EPYC" is family 25 model 17 on Zen 4, family 26
// on Zen 5).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace llmwb::cli {

struct CpuInfo {
  std::string name = "unknown CPU";
  int family = -1, model = -1;   // -1 where /proc/cpuinfo does not say
  // "AMD EPYC (family 25 model 17)", or just the name.
  std::string describe() const;
  // {"cpu": name, "cpu_family": f, "cpu_model": m} merged into `j`.
  void add_to(nlohmann::json& j) const;
};

// The first processor's entry of /proc/cpuinfo.
CpuInfo cpu_info();

}  // namespace llmwb::cli
