// test_support.h — helpers shared by the engine tests.
#pragma once

#include <string>

namespace llmwb::test {

// ../shared/models/... beside the repository (read-only).
std::string shared_path(const std::string& rel);
// A fresh, empty scratch folder for one test (under the build tree).
std::string scratch_dir(const std::string& name);
// Whole file as bytes / writes bytes.
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace llmwb::test
