// experiment.h — the same prompts and seed run under several engine configurations.
#pragma once

#include <QJsonObject>
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

#include "llmwb/engine_config.h"
#include "llmwb/sampling_params.h"

namespace llmwb::ui {

// The engine settings one column of an experiment varies; the model is the one loaded.
struct ExperimentConfig {
  QString name;
  QString backend;   // "cpu", "cuda"; "" = the one chosen in Settings
  int threads = 0;   // 0 = automatic (AppSettings::automatic_threads)
  int block_size = 16;
  int max_num_seqs = 64;
  int max_num_batched_tokens = 512;
  bool enable_prefix_caching = true;
  QString kv_dtype = "f32";
  QString quantize;  // "" = as stored
  QString speculative;  // "" = off; else llmwb::parse_speculative's form ("ngram", "self-int4", ...)
  int spec_k = 0;       // guesses per step; 0 = adaptive
  double spec_p_min = -1;   // a model draft stops below this probability; < 0 = automatic
  int tensor_parallel_size = 1;     // in-process ranks (docs/PARALLEL.md)
  int pipeline_parallel_size = 1;

  static ExperimentConfig named(const QString& name, int threads = 0, int block_size = 16) {
    ExperimentConfig c;
    c.name = name;
    c.threads = threads;
    c.block_size = block_size;
    return c;
  }
  // `base` supplies the model, tokenizer and everything an experiment does not vary. Throws
  // llmwb::Error for a speculation the engine does not know.
  EngineConfig apply_to(EngineConfig base) const;
  QJsonObject to_json() const;
  static ExperimentConfig from_json(const QJsonObject& o);
};

struct Experiment {
  QString name = "experiment";
  QStringList prompts;
  quint64 seed = 1234;
  float temperature = 0.0f;
  int max_tokens = 64;
  // Also measure each configuration's accuracy against the stored weights (perplexity, KL
  // divergence, greedy agreement on a built-in text): what a quantization scheme costs. It
  // loads the model twice more per configuration, so it is off unless asked for.
  bool accuracy = false;
  std::vector<ExperimentConfig> configs;

  SamplingParams sampling_params() const;
  QJsonObject to_json() const;
  // Throws llmwb::Error(where, what) on a malformed document.
  static Experiment from_json(const QJsonObject& o, const QString& where);
  // Written atomically (QSaveFile): a crash never leaves half a file. Throws llmwb::Error.
  void save(const QString& path) const;
  static Experiment load(const QString& path);
};

// One configuration's outcome.
struct ExperimentResult {
  int config_index = 0;
  QString config_name;
  QString error;  // non-empty when the configuration could not run
  std::vector<std::vector<int>> token_ids;  // per prompt
  std::vector<std::string> texts;           // per prompt
  // Metric columns in display order: name -> value (NaN when not measured).
  std::vector<std::pair<QString, double>> metrics;
};

}  // namespace llmwb::ui

Q_DECLARE_METATYPE(llmwb::ui::Experiment)
Q_DECLARE_METATYPE(llmwb::ui::ExperimentResult)
