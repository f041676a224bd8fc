// app_settings.h — the user's preferences, persisted with QSettings.
#pragma once

#include <QString>
#include <QStringList>

#include "llmwb/engine_config.h"

namespace llmwb::ui {

struct AppSettings {
  // Engine configuration applied when a model is opened.
  QString backend = "cpu";  // EngineConfig::backend: "cpu" or "cuda"
  int threads = 0;  // 0 = automatic: all cores but one
  int block_size = 16;
  int max_num_seqs = 64;
  int max_num_batched_tokens = 512;
  int max_model_len = 0;
  int kv_memory_mib = 0;  // 0 = the engine's default budget
  QString kv_dtype = "f32";  // KV cache element type, one of llmwb::kv_dtypes()
  bool enable_prefix_caching = true;
  // Speculative decoding, in llmwb::parse_speculative's form ("off", "ngram", "self-int4",
  // "layers:K", "draft:PATH"), and tokens guessed per step (0 = adaptive).
  QString speculative = "off";
  int spec_k = 0;
  // A model draft stops guessing below this probability; < 0 = automatic (the engine's default).
  double spec_p_min = -1;
  // Tensor and pipeline parallelism (docs/PARALLEL.md): ranks as threads of this process, the
  // only distribution the GUI runs (MPI starts one process per rank under mpirun).
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  // Slow motion between engine steps, for watching the KV cache and timeline (0 = off).
  int step_delay_ms = 0;
  QString theme = "system";  // "system", "light", "dark"

  EngineConfig engine_config(const QString& model, const QString& tokenizer) const;
  static AppSettings load();
  void save() const;

  static QStringList recent_models();
  // The engine thread count for "automatic" (threads == 0): all cores but one, so that the GUI
  // thread never holds up a parallel step at its barrier while it paints.
  static int automatic_threads();
  static void add_recent_model(const QString& path);
  // The chat marks the text of accepted draft tokens (speculative decoding); on unless turned
  // off. Kept apart from the engine settings above: the chat's toggle writes it at once.
  static bool show_draft_tokens();
  static void set_show_draft_tokens(bool on);
};

}  // namespace llmwb::ui
