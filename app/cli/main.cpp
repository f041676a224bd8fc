// llmwb-cli — the headless face of LLM Workbench: every engine feature, scriptable.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "args.h"
#include "command.h"
#include "llmwb/build_info.h"
#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"

namespace llmwb::cli {
std::vector<Command>& commands() {
  static std::vector<Command> c;
  return c;
}
}  // namespace llmwb::cli

using namespace llmwb::cli;

// Output that did not reach its destination (a full disk, `> /dev/full`, a closed pipe) is a
// failure: stdout is flushed and closed here and any error turns the exit status into 1, with
// the reason on stderr. Returns `rc` when all went well.
static int finish_stdout(const char* command, int rc) {
  errno = 0;
  std::cout.flush();   // synced with stdio: this flushes stdout, and may fail there
  int error = errno;
  const bool stream_ok = !std::cout.fail();
  const bool flushed = std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (!error) error = errno;
  const bool closed = std::fclose(stdout) == 0;
  if (!error) error = errno;
  if (stream_ok && flushed && closed) return rc;
  // No errno left: an earlier flush (a streamed completion) failed and the reason went with it.
  std::fprintf(stderr, "llmwb-cli%s%s: error: cannot write the output (stdout): %s\n", command ? " " : "",
               command ? command : "", error ? std::strerror(error) : "a write failed, output was lost");
  return rc ? rc : 1;
}

static void print_help() {
  std::printf("usage: llmwb-cli COMMAND [flags]   (llmwb-cli COMMAND --help for its flags)\n"
              "       llmwb-cli --version         version, commit and build options\n\ncommands:\n");
  for (const auto& c : commands()) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf("\nenvironment (defaults of the engine's tuning switches, --tuning NAME=VALUE overrides;\n"
              "none changes a token):\n%s", llmwb::TuningConfig::environment_help().c_str());
}

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_help();
    return finish_stdout(nullptr, argc < 2 ? 2 : 0);
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version")) {
    std::fputs(llmwb::build_info_text().c_str(), stdout);
    return finish_stdout(nullptr, 0);
  }
  const std::string name = argv[1];
  for (const auto& c : commands()) {
    if (name != c.name) continue;
    std::vector<std::string> args(argv + 2, argv + argc);
    for (const auto& a : args)
      if (a == "--help" || a == "-h") {
        std::printf("usage: llmwb-cli %s %s\n", c.name, c.usage);
        return finish_stdout(c.name, 0);
      }
    try {
      const int rc = c.run(args);
      return finish_stdout(c.name, rc);
    } catch (const UsageError& e) {
      std::fprintf(stderr, "llmwb-cli %s: %s\nusage: llmwb-cli %s %s\n", c.name, e.what(), c.name, c.usage);
      return 2;
    } catch (const llmwb::Error& e) {
      std::fprintf(stderr, "llmwb-cli %s: error: %s\n", c.name, e.what());
      return 1;
    } catch (const std::bad_alloc&) {
      // Allocations sized by a flag name it themselves (the KV pool: --kv-memory); this is the rest.
      std::fprintf(stderr, "llmwb-cli %s: error: out of memory (std::bad_alloc): the model, --max-model-len, "
                   "--max-num-seqs or --max-batched-tokens may need more memory than this machine has\n", c.name);
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "llmwb-cli %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "llmwb-cli: unknown command '%s'\n", name.c_str());
  print_help();
  return 2;
}
