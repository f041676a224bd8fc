// llmwb/backends.h — which compute backends this build and machine can run, for the CLI and
// the GUI's backend choice (EngineConfig::backend).
#pragma once

#include <string>
#include <vector>

namespace llmwb {

struct BackendInfo {
  std::string name;         // "cpu", "cuda" (the EngineConfig::backend value)
  std::string label;        // "CPU", "CUDA (NVIDIA H200)"
  bool available = false;
  std::string reason;       // why not, when !available
};

// Every backend the engine knows, available or not, "cpu" first.
std::vector<BackendInfo> list_backends();

}  // namespace llmwb
