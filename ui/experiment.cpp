#include "experiment.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

#include "app_settings.h"
#include "llmwb/errors.h"

namespace llmwb::ui {

EngineConfig ExperimentConfig::apply_to(EngineConfig base) const {
  if (!backend.isEmpty()) base.backend = backend.toStdString();
  base.threads = threads > 0 ? threads : AppSettings::automatic_threads();
  base.block_size = block_size;
  base.max_num_seqs = max_num_seqs;
  base.max_num_batched_tokens = max_num_batched_tokens;
  base.enable_prefix_caching = enable_prefix_caching;
  base.kv_dtype = kv_dtype.toStdString();
  base.quantize = quantize.toStdString();
  base.tensor_parallel_size = tensor_parallel_size;
  base.pipeline_parallel_size = pipeline_parallel_size;
  base.speculative = parse_speculative(speculative.toStdString(), spec_k);
  if (base.speculative.method != "ngram") base.speculative.draft_p_min = spec_p_min < 0 ? -1 : spec_p_min;
  return base;
}

QJsonObject ExperimentConfig::to_json() const {
  QJsonObject o{{"name", name},
                {"threads", threads},
                {"block_size", block_size},
                {"max_num_seqs", max_num_seqs},
                {"max_num_batched_tokens", max_num_batched_tokens},
                {"enable_prefix_caching", enable_prefix_caching},
                {"kv_dtype", kv_dtype},
                {"quantize", quantize},
                {"tensor_parallel_size", tensor_parallel_size},
                {"pipeline_parallel_size", pipeline_parallel_size}};
  if (!backend.isEmpty()) o["backend"] = backend;
  if (!speculative.isEmpty()) {
    o["speculative"] = speculative;
    o["spec_k"] = spec_k;
    if (spec_p_min >= 0) o["spec_p_min"] = spec_p_min;
  }   // absent: as in Settings (files from before the column)
  return o;
}

ExperimentConfig ExperimentConfig::from_json(const QJsonObject& o) {
  ExperimentConfig c;
  c.name = o.value("name").toString(c.name);
  c.backend = o.value("backend").toString(c.backend);
  c.threads = o.value("threads").toInt(c.threads);
  c.block_size = o.value("block_size").toInt(c.block_size);
  c.max_num_seqs = o.value("max_num_seqs").toInt(c.max_num_seqs);
  c.max_num_batched_tokens = o.value("max_num_batched_tokens").toInt(c.max_num_batched_tokens);
  c.enable_prefix_caching = o.value("enable_prefix_caching").toBool(c.enable_prefix_caching);
  c.kv_dtype = o.value("kv_dtype").toString(c.kv_dtype);
  c.quantize = o.value("quantize").toString(c.quantize);
  c.tensor_parallel_size = o.value("tensor_parallel_size").toInt(c.tensor_parallel_size);
  c.pipeline_parallel_size = o.value("pipeline_parallel_size").toInt(c.pipeline_parallel_size);
  c.speculative = o.value("speculative").toString(c.speculative);
  if (c.speculative == "off") c.speculative.clear();
  c.spec_k = o.value("spec_k").toInt(c.spec_k);
  c.spec_p_min = o.value("spec_p_min").toDouble(c.spec_p_min);
  return c;
}

SamplingParams Experiment::sampling_params() const {
  SamplingParams p;
  p.temperature = temperature;
  p.max_tokens = max_tokens;
  p.seed = seed;
  return p;
}

QJsonObject Experiment::to_json() const {
  QJsonArray configs_json;
  for (const auto& c : configs) configs_json.append(c.to_json());
  return QJsonObject{{"name", name},
                     {"prompts", QJsonArray::fromStringList(prompts)},
                     // A string: JSON numbers are doubles and would round seeds above 2^53.
                     {"seed", QString::number(seed)},
                     {"temperature", double(temperature)},
                     {"max_tokens", max_tokens},
                     {"accuracy", accuracy},
                     {"configs", configs_json}};
}

Experiment Experiment::from_json(const QJsonObject& o, const QString& where) {
  const std::string w = where.toStdString();
  if (!o.value("configs").isArray()) throw Error(w, "'configs' must be an array");
  if (!o.value("prompts").isArray()) throw Error(w, "'prompts' must be an array of strings");
  Experiment e;
  e.name = o.value("name").toString(e.name);
  for (const auto& p : o.value("prompts").toArray()) {
    if (!p.isString()) throw Error(w, "'prompts' must be an array of strings");
    e.prompts << p.toString();
  }
  const QJsonValue seed = o.value("seed");
  bool ok = true;
  if (seed.isString()) e.seed = seed.toString().toULongLong(&ok);
  else if (seed.isDouble()) e.seed = quint64(seed.toDouble());
  if (!ok) throw Error(w, "'seed' is not an unsigned integer");
  e.temperature = float(o.value("temperature").toDouble(e.temperature));
  e.max_tokens = o.value("max_tokens").toInt(e.max_tokens);
  e.accuracy = o.value("accuracy").toBool(e.accuracy);
  for (const auto& c : o.value("configs").toArray()) {
    if (!c.isObject()) throw Error(w, "each entry of 'configs' must be an object");
    e.configs.push_back(ExperimentConfig::from_json(c.toObject()));
  }
  return e;
}

void Experiment::save(const QString& path) const {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly))
    throw Error(path.toStdString(), "cannot write: " + f.errorString().toStdString());
  f.write(QJsonDocument(to_json()).toJson());
  if (!f.commit()) throw Error(path.toStdString(), "cannot write: " + f.errorString().toStdString());
}

Experiment Experiment::load(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly))
    throw Error(path.toStdString(), "cannot read: " + f.errorString().toStdString());
  QJsonParseError err{};
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
  if (err.error != QJsonParseError::NoError)
    throw Error(path.toStdString(), "not JSON at offset " + std::to_string(err.offset) + ": " +
                                        err.errorString().toStdString());
  if (!doc.isObject()) throw Error(path.toStdString(), "expected a JSON object");
  return from_json(doc.object(), path);
}

}  // namespace llmwb::ui
