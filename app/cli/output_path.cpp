#include "output_path.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "llmwb/errors.h"

namespace llmwb::cli {
namespace {

namespace fs = std::filesystem;

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a folder";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

bool same_file(const struct stat& a, const std::string& path) {
  struct stat b {};
  return ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

void prepare_output_file(const std::string& flag, const std::string& out, const std::vector<std::string>& inputs,
                         bool force) {
  const std::string where = "--" + flag + " " + out;
  struct stat st {};
  if (::stat(out.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      throw Error(where, std::string("is ") + kind_of(st.st_mode) +
                             ", not a regular file: refusing to replace it (--force does not change this)");
    for (const std::string& in : inputs) {
      std::vector<std::string> files{in};
      std::error_code ec;
      if (fs::is_directory(in, ec))
        for (const auto& e : fs::directory_iterator(in, ec)) files.push_back(e.path().string());
      for (const std::string& f : files)
        if (same_file(st, f) && !force)
          throw Error(where, "is the input " + f + ": writing it would replace the input (pass --force to do so)");
    }
  } else if (errno != ENOENT) {
    throw Error(where, std::string("cannot check the output path: ") + std::strerror(errno));
  }
  const std::string partial = out + ".partial";
  if (::lstat(partial.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error(partial, std::string("is ") + kind_of(st.st_mode) + " (" + out +
                             " is written there first, then renamed): remove it or choose another --" + flag);
  // The folder rule shared with make-model: a missing output folder is created.
  const fs::path parent = fs::path(out).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (!fs::is_directory(parent))
      throw Error(parent.string(), "cannot create the output folder" + (ec ? ": " + ec.message() : std::string()));
  }
}

}  // namespace llmwb::cli
