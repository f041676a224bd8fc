#include "remove_on_interrupt.h"

#include <unistd.h>

#include <cstring>

#include "llmwb/errors.h"

namespace llmwb::cli {
namespace {

char g_path[4096];
volatile std::sig_atomic_t g_armed = 0;

extern "C" void remove_and_reraise(int sig) {
  if (g_armed) ::unlink(g_path);
  std::signal(sig, SIG_DFL);
  std::raise(sig);   // blocked until the handler returns, then the default action: termination
}

}  // namespace

RemoveOnInterrupt::RemoveOnInterrupt(const std::string& path) {
  if (path.size() >= sizeof g_path) throw Error(path, "path too long");
  std::memcpy(g_path, path.c_str(), path.size() + 1);
  struct sigaction sa {};
  sa.sa_handler = remove_and_reraise;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaddset(&sa.sa_mask, SIGHUP);
  g_armed = 1;
  // A signal the parent set to be ignored (nohup, a background job of a script) stays ignored.
  auto install = [&](int sig, struct sigaction* old) {
    sigaction(sig, nullptr, old);
    if (old->sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);
  };
  install(SIGINT, &old_int_);
  install(SIGTERM, &old_term_);
  install(SIGHUP, &old_hup_);
}

RemoveOnInterrupt::~RemoveOnInterrupt() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
  g_armed = 0;
}

}  // namespace llmwb::cli
