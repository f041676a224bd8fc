// step_inspection_meta.h — llmwb::StepInspection as a QMetaType: it travels from the engine
// thread to the Completion view in a queued signal (the token inspector).
#pragma once

#include <QMetaType>

#include "llmwb/step_inspection.h"

Q_DECLARE_METATYPE(llmwb::StepInspection)
