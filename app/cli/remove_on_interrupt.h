// remove_on_interrupt.h — a file that must not outlive an interrupted command (quantize's
// OUT.partial): removed when SIGINT, SIGTERM or SIGHUP arrives while the guard lives.
#pragma once

#include <csignal>
#include <string>

namespace llmwb::cli {

class RemoveOnInterrupt {
 public:
  // Installs the handlers. The path is copied into static storage now: the handler may only
  // call async-signal-safe functions (POSIX.1-2017 2.4.3), so it unlinks the stored path, puts
  // back the default action and re-raises, and the process still dies of the signal (exit 130
  // for SIGINT in a shell). One guard at a time.
  explicit RemoveOnInterrupt(const std::string& path);
  // Restores the previous handlers; the file is left to its writer.
  ~RemoveOnInterrupt();
  RemoveOnInterrupt(const RemoveOnInterrupt&) = delete;
  RemoveOnInterrupt& operator=(const RemoveOnInterrupt&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {}, old_hup_ {};
};

}  // namespace llmwb::cli
