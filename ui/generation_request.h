// generation_request.h — one generation the GUI asks the EngineWorker to run.
#pragma once

#include <QMetaType>
#include <QString>

#include <string>

#include "llmwb/sampling_params.h"

namespace llmwb::ui {

struct GenerationRequest {
  // Chosen by the GUI so that a view can recognise its own outputs before the engine has
  // assigned a request id (the worker maps tickets to engine ids).
  quint64 ticket = 0;
  std::string prompt;  // the text after the chat template; the engine adds BOS
  SamplingParams params;
};

}  // namespace llmwb::ui

Q_DECLARE_METATYPE(llmwb::ui::GenerationRequest)

namespace llmwb::ui {

// A process-wide unique ticket for a new GenerationRequest (thread-safe).
quint64 next_ticket();

}  // namespace llmwb::ui
