#include "llmwb/model_probe.h"

#include "format/model_file.h"
#include "model/model_describe.h"

namespace llmwb {

ModelInfo probe_model(const std::string& path) {
  const std::unique_ptr<ModelFile> file = load_model_file(path);
  return describe_model(*file, nullptr);
}

}  // namespace llmwb
