// meta_types.h — engine and GUI value types that travel through queued signals.
//
// Queued connections copy their arguments into an event, so every type crossing from the
// EngineWorker thread to the GUI thread must be a registered QMetaType.
#pragma once

#include <QMetaType>

#include "experiment.h"
#include "generation_request.h"
#include "llmwb/engine_config.h"
#include "llmwb/model_info.h"
#include "llmwb/quant_report.h"
#include "step_inspection_meta.h"
#include "telemetry_frame.h"
#include "token_count_request.h"
#include "token_delta.h"

Q_DECLARE_METATYPE(llmwb::EngineConfig)
Q_DECLARE_METATYPE(llmwb::ModelInfo)
Q_DECLARE_METATYPE(llmwb::QuantReportOptions)
Q_DECLARE_METATYPE(llmwb::QuantReport)

namespace llmwb::ui {

// Registers the types above; call once before the worker thread starts.
void register_meta_types();

}  // namespace llmwb::ui
