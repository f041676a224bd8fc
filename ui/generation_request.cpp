#include "generation_request.h"

#include <atomic>

namespace llmwb::ui {

quint64 next_ticket() {
  static std::atomic<quint64> counter{0};
  return ++counter;
}

}  // namespace llmwb::ui
