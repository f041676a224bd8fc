// exception_text.h — the message of the exception a rank's thread has caught, for the abort
// that releases the other ranks (parallel_runner.cpp, cuda_parallel_runner.cpp).
#pragma once

#include <exception>
#include <string>

namespace llmwb {

// Inside a catch block: what() of the exception being handled, or `fallback` when it is not a
// std::exception.
inline std::string current_exception_text(const char* fallback) {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return fallback;
  }
}

}  // namespace llmwb
