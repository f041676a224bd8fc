// wait_for_events.h — the harness modes' way of waiting inside a test script: runs the GUI
// thread's event loop (so queued results arrive and views repaint) until `done` or `seconds`.
#pragma once

#include <functional>

namespace llmwb::gui {

// True once done() holds; false when `seconds` pass first.
bool wait_for_events(const std::function<bool()>& done, double seconds);

}  // namespace llmwb::gui
