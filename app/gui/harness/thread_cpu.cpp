#include "thread_cpu.h"

#include <ctime>
#include <filesystem>
#include <fstream>

namespace llmwb::gui {

double this_thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

std::map<std::string, double> thread_cpu_by_name() {
  std::map<std::string, double> out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::ifstream sched(task.path() / "schedstat");  // first field: nanoseconds on a CPU
    std::string name;
    unsigned long long ns = 0;
    if (!std::getline(comm, name) || !(sched >> ns)) continue;  // the thread just ended
    out[name] += 1e-9 * double(ns);
  }
  return out;
}

std::map<std::string, double> cpu_difference(const std::map<std::string, double>& a,
                                             const std::map<std::string, double>& b) {
  std::map<std::string, double> out;
  for (const auto& [name, seconds] : b) {
    const auto it = a.find(name);
    out[name] = seconds - (it == a.end() ? 0.0 : it->second);
  }
  return out;
}

}  // namespace llmwb::gui
