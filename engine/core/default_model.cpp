#include "llmwb/default_model.h"

#include <filesystem>
#include <system_error>

namespace llmwb {

namespace fs = std::filesystem;

std::vector<std::string> default_model_locations() {
  std::vector<std::string> places;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.has_parent_path()) {
    const fs::path installed =
        exe.parent_path().parent_path() / "share/llmwb/models/stories260K/stories260K.gguf";
    places.push_back(installed.lexically_normal().string());
  }
  // Set for this file only by engine/CMakeLists.txt (LLMWB_SHARED_DIR).
  places.push_back(LLMWB_SOURCE_TREE_MODEL);
  return places;
}

std::string find_default_model() {
  for (const std::string& p : default_model_locations()) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p;
  }
  return {};
}

}  // namespace llmwb
