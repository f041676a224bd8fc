#include "meta_types.h"

namespace llmwb::ui {

void register_meta_types() {
  qRegisterMetaType<llmwb::EngineConfig>();
  qRegisterMetaType<llmwb::ModelInfo>();
  qRegisterMetaType<llmwb::QuantReportOptions>();
  qRegisterMetaType<llmwb::QuantReport>();
  qRegisterMetaType<llmwb::StepInspection>();
  qRegisterMetaType<GenerationRequest>();
  qRegisterMetaType<TokenDelta>();
  qRegisterMetaType<TokenCountRequest>();
  qRegisterMetaType<TelemetryFrame>();
  qRegisterMetaType<Experiment>();
  qRegisterMetaType<ExperimentResult>();
}

}  // namespace llmwb::ui
