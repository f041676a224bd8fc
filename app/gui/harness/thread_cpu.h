// thread_cpu.h — CPU time of this process's threads, by thread name, for the GUI benchmark.
//
// On a machine with few cores the GUI thread's CPU time is taken from the engine's threads,
// so the benchmark reports where the process spent its CPU (GUI thread, engine worker, thread
// pool, Qt's helper threads) rather than only wall-clock rates, which contention disturbs.
// Linux only (/proc/self/task/*/schedstat); elsewhere the snapshot is empty.
#pragma once

#include <map>
#include <string>

namespace llmwb::gui {

// CPU seconds used by the calling thread so far (CLOCK_THREAD_CPUTIME_ID).
double this_thread_cpu_seconds();

// CPU seconds of every live thread of this process, summed by thread name (comm).
std::map<std::string, double> thread_cpu_by_name();

// b - a, name by name (threads that ended between the snapshots are missing from b).
std::map<std::string, double> cpu_difference(const std::map<std::string, double>& a,
                                             const std::map<std::string, double>& b);

}  // namespace llmwb::gui
