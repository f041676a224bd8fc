#include "app_settings.h"

#include <QSettings>

#include <algorithm>
#include <thread>

namespace llmwb::ui {

EngineConfig AppSettings::engine_config(const QString& model, const QString& tokenizer) const {
  EngineConfig c;
  c.model = model.toStdString();
  c.tokenizer = tokenizer.toStdString();
  c.backend = backend.toStdString();
  c.threads = threads > 0 ? threads : automatic_threads();
  c.block_size = block_size;
  c.max_num_seqs = max_num_seqs;
  c.max_num_batched_tokens = max_num_batched_tokens;
  c.max_model_len = max_model_len;
  c.kv_memory_bytes = uint64_t(kv_memory_mib) * 1024 * 1024;
  c.kv_dtype = kv_dtype.toStdString();
  c.enable_prefix_caching = enable_prefix_caching;
  c.speculative = parse_speculative(speculative.toStdString(), spec_k);   // checked when chosen
  if (c.speculative.method != "ngram") c.speculative.draft_p_min = spec_p_min < 0 ? -1 : spec_p_min;
  c.tensor_parallel_size = tensor_parallel_size;
  c.pipeline_parallel_size = pipeline_parallel_size;
  c.dist = "threads";
  return c;
}

int AppSettings::automatic_threads() {
  // With every core in the engine's thread pool, each millisecond spent painting would hold up a
  // whole parallel step at its barrier.
  return std::max(1, int(std::thread::hardware_concurrency()) - 1);
}

AppSettings AppSettings::load() {
  QSettings s;
  AppSettings a;
  s.beginGroup("engine");
  a.backend = s.value("backend", a.backend).toString();
  a.threads = s.value("threads", a.threads).toInt();
  a.block_size = s.value("block_size", a.block_size).toInt();
  a.max_num_seqs = s.value("max_num_seqs", a.max_num_seqs).toInt();
  a.max_num_batched_tokens = s.value("max_num_batched_tokens", a.max_num_batched_tokens).toInt();
  a.max_model_len = s.value("max_model_len", a.max_model_len).toInt();
  a.kv_memory_mib = s.value("kv_memory_mib", a.kv_memory_mib).toInt();
  a.kv_dtype = s.value("kv_dtype", a.kv_dtype).toString();
  a.enable_prefix_caching = s.value("enable_prefix_caching", a.enable_prefix_caching).toBool();
  a.speculative = s.value("speculative", a.speculative).toString();
  a.spec_k = s.value("spec_k", a.spec_k).toInt();
  a.spec_p_min = s.value("spec_p_min", a.spec_p_min).toDouble();
  if (!(a.spec_p_min < 1) || a.spec_p_min < 0) a.spec_p_min = -1;   // a hand-edited value out of range: automatic
  a.tensor_parallel_size = std::max(1, s.value("tensor_parallel_size", a.tensor_parallel_size).toInt());
  a.pipeline_parallel_size = std::max(1, s.value("pipeline_parallel_size", a.pipeline_parallel_size).toInt());
  s.endGroup();
  a.step_delay_ms = s.value("view/step_delay_ms", a.step_delay_ms).toInt();
  a.theme = s.value("view/theme", a.theme).toString();
  return a;
}

void AppSettings::save() const {
  QSettings s;
  s.beginGroup("engine");
  s.setValue("backend", backend);
  s.setValue("threads", threads);
  s.setValue("block_size", block_size);
  s.setValue("max_num_seqs", max_num_seqs);
  s.setValue("max_num_batched_tokens", max_num_batched_tokens);
  s.setValue("max_model_len", max_model_len);
  s.setValue("kv_memory_mib", kv_memory_mib);
  s.setValue("kv_dtype", kv_dtype);
  s.setValue("enable_prefix_caching", enable_prefix_caching);
  s.setValue("speculative", speculative);
  s.setValue("spec_k", spec_k);
  s.setValue("spec_p_min", spec_p_min);
  s.setValue("tensor_parallel_size", tensor_parallel_size);
  s.setValue("pipeline_parallel_size", pipeline_parallel_size);
  s.endGroup();
  s.setValue("view/step_delay_ms", step_delay_ms);
  s.setValue("view/theme", theme);
}

QStringList AppSettings::recent_models() { return QSettings().value("recent_models").toStringList(); }

void AppSettings::add_recent_model(const QString& path) {
  QStringList list = recent_models();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > 10) list.removeLast();
  QSettings().setValue("recent_models", list);
}

bool AppSettings::show_draft_tokens() { return QSettings().value("view/show_draft_tokens", true).toBool(); }

void AppSettings::set_show_draft_tokens(bool on) { QSettings().setValue("view/show_draft_tokens", on); }

}  // namespace llmwb::ui
