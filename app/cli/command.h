// command.h — llmwb-cli subcommands. Each cmd_*.cpp defines one command and registers it
// with a static CommandRegistration, so adding a subcommand touches no other file.
#pragma once

#include <string>
#include <vector>

namespace llmwb::cli {

struct Command {
  const char* name;      // "generate"
  const char* summary;   // one line for `llmwb-cli --help`
  const char* usage;     // the full flag list, printed by `llmwb-cli NAME --help` and on usage errors
  int (*run)(const std::vector<std::string>& args);   // args after the command name
};

std::vector<Command>& commands();

struct CommandRegistration {
  explicit CommandRegistration(const Command& c) { commands().push_back(c); }
};

}  // namespace llmwb::cli
