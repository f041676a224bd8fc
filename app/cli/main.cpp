// llmwb-cli — the headless face of LLM Workbench: every engine feature, scriptable.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "args.h"
#include "command.h"
#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"

namespace llmwb::cli {
std::vector<Command>& commands() {
  static std::vector<Command> c;
  return c;
}
}  // namespace llmwb::cli

using namespace llmwb::cli;

static void print_help() {
  std::printf("usage: llmwb-cli COMMAND [flags]   (llmwb-cli COMMAND --help for its flags)\n\ncommands:\n");
  for (const auto& c : commands()) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf("\nenvironment (defaults of the engine's tuning switches, --tuning NAME=VALUE overrides;\n"
              "none changes a token):\n%s", llmwb::TuningConfig::environment_help().c_str());
}

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  for (const auto& c : commands()) {
    if (name != c.name) continue;
    std::vector<std::string> args(argv + 2, argv + argc);
    for (const auto& a : args)
      if (a == "--help" || a == "-h") {
        std::printf("usage: llmwb-cli %s %s\n", c.name, c.usage);
        return 0;
      }
    try {
      return c.run(args);
    } catch (const UsageError& e) {
      std::fprintf(stderr, "llmwb-cli %s: %s\nusage: llmwb-cli %s %s\n", c.name, e.what(), c.name, c.usage);
      return 2;
    } catch (const llmwb::Error& e) {
      std::fprintf(stderr, "llmwb-cli %s: error: %s\n", c.name, e.what());
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
