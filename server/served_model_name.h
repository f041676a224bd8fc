// served_model_name.h — the model's id in /v1/models and in requests' `model` field: the model
// file's name without its extension ("stories260K"), or a Hugging Face folder's name.
#pragma once

#include <filesystem>
#include <string>

namespace llmwb::server {

inline std::string served_model_name(const std::string& model_path) {
  std::filesystem::path p(model_path);
  while (!p.empty() && !p.has_filename()) p = p.parent_path();
  std::error_code ec;
  return std::filesystem::is_directory(p, ec) ? p.filename().string() : p.stem().string();
}

}  // namespace llmwb::server
