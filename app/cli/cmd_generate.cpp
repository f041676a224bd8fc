// llmwb-cli generate — run prompts through the engine (concurrently, via the scheduler).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "chat_flags.h"
#include "command.h"
#include "engine_flags.h"
#include "llmwb/chat_prompt.h"
#include "json_output.h"
#include "llmwb/engine.h"
#include "llmwb/errors.h"
#include "telemetry/telemetry_json.h"

namespace llmwb::cli {
namespace {

std::vector<std::string> read_prompts_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(path, "is a folder, not a prompts file (one prompt per line)");
  std::ifstream f(path);
  if (!f) throw Error(path, std::string("cannot open the prompts file: ") + std::strerror(errno));
  std::vector<std::string> out;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(line);
  }
  if (f.bad()) throw Error(path, std::string("cannot read the prompts file: ") + std::strerror(errno));
  return out;
}

int run_generate(const std::vector<std::string>& argv) {
  Args a(argv, join({engine_value_flags(), sampling_value_flags(), chat_value_flags(), {"prompt", "prompts-file", "trace"}}),
         join({engine_bool_flags(), chat_bool_flags(), {"json", "ignore-eos", "quiet"}}));
  const ChatRequestFlags chat = chat_request_from(a);  // bad chat input fails before the model loads
  EngineConfig cfg = engine_config_from(a);
  SamplingParams params = sampling_params_from(a);
  params.ignore_eos = a.flag("ignore-eos");
  std::vector<std::string> prompts = a.all("prompt");
  if (a.has("prompts-file")) {
    auto more = read_prompts_file(a.str("prompts-file"));
    prompts.insert(prompts.end(), more.begin(), more.end());
  }
  if (prompts.empty()) prompts.push_back("");   // a BOS-only prompt
  const bool json = a.flag("json");
  std::ofstream trace;
  if (a.has("trace")) {
    trace.open(a.str("trace"), std::ios::trunc);
    if (!trace) throw Error(a.str("trace"), std::string("cannot write the trace file: ") + std::strerror(errno));
  }
  // Every line is checked: a full disk or a file size limit must not lose the trace silently.
  auto trace_failed = [&] {
    throw Error(a.str("trace"), std::string("cannot write the trace file: ") + std::strerror(errno));
  };

  Engine engine(cfg);
  warn_beyond_trained_context(engine, "generate");
  std::map<uint64_t, size_t> index;
  std::vector<RequestOutput> results(prompts.size());
  int failures = 0;
  // --chat: one conversation through the chat template, tokenized as the Chat view does.
  std::optional<RenderedChat> rendered;
  ChatTemplate chat_template;
  if (a.flag("chat")) {
    chat_template = model_chat_template(engine);
    if (chat.format != "auto") {
      ChatFormat f = ChatFormat::Completion;
      chat_format_from_name(chat.format, &f);
      chat_template = chat_template_for(f);
    }
    if (!chat_template.recognized) std::fprintf(stderr, "llmwb-cli generate: %s\n", chat_template.description.c_str());
    rendered = render_chat(chat_template, chat.messages, chat.options);
    prompts = {rendered->text()};
    if (a.flag("verbose-prompt")) {
      std::fprintf(stderr, "chat format: %s\nprompt: %s\nprompt token ids:", chat_template.description.c_str(),
                   prompts[0].c_str());
      for (int id : chat_prompt_ids(engine, *rendered)) std::fprintf(stderr, " %d", id);
      std::fprintf(stderr, "\n");
    }
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    try {
      // An empty prompt is BOS alone; otherwise BOS + the prompt's tokens.
      index[rendered ? add_chat_request(engine, *rendered, chat_template.format, params)
                     : engine.add_request(prompts[i], params)] = i;
    } catch (const Error& e) {
      std::fprintf(stderr, "llmwb-cli generate: prompt %zu: %s\n", i + 1, e.what());
      results[i].prompt = prompts[i];
      results[i].error = e.what();
      ++failures;
    }
  }
  // One prompt, text mode: stream the completion as it is generated.
  const bool stream = !json && prompts.size() == 1 && params.n == 1 && !index.empty();
  if (stream && !rendered) {  // a chat shows the reply alone
    std::fputs(prompts[0].c_str(), stdout);
    std::fflush(stdout);
  }
  while (engine.has_unfinished()) {
    for (RequestOutput& o : engine.step()) {
      if (stream && !o.outputs.empty()) {
        std::fputs(o.outputs[0].delta.c_str(), stdout);
        std::fflush(stdout);
      }
      if (o.finished) results[index.at(o.request_id)] = std::move(o);
    }
    if (trace.is_open() && !(trace << telemetry_to_json(engine.telemetry()) << '\n')) trace_failed();
  }
  if (trace.is_open()) {
    trace.close();
    if (trace.fail()) trace_failed();
  }
  if (stream) std::fputs("\n", stdout);

  for (size_t i = 0; i < prompts.size(); ++i) {
    const RequestOutput& r = results[i];
    if (!r.error.empty()) {
      if (json) {
        nlohmann::json j;
        set_text(j, "prompt", prompts[i]);
        set_text(j, "error", r.error);
        std::cout << dump_json(j) << "\n";
      }
      continue;
    }
    for (const CompletionOutput& c : r.outputs) {
      if (json) {
        // Prompts and completions are bytes: invalid UTF-8 is replaced (U+FFFD) and flagged
        // ("prompt_utf8_replaced": true), so one bad prompt never loses the other results.
        nlohmann::json j{{"token_ids", c.token_ids},
                         {"finish_reason", to_string(c.finish_reason)},
                         {"prompt_tokens", r.prompt_token_ids.size()},
                         {"completion_tokens", c.token_ids.size()},
                         {"cached_prompt_tokens", r.num_cached_prompt_tokens},
                         {"time_to_first_token", r.time_to_first_token},
                         {"total_time", r.total_time}};
        set_text(j, "prompt", prompts[i]);
        set_text(j, "text", c.text);
        if (params.n > 1) j["index"] = c.index;
        if (!c.stop_reason.empty()) set_text(j, "stop_reason", c.stop_reason);
        if (cfg.speculative.enabled()) {
          const SpeculativeStats& s = c.speculative;
          j["speculative"] = {{"method", cfg.speculative.method},
                              {"drafted", s.drafted},
                              {"accepted", s.accepted},
                              {"drafts", s.drafts},
                              {"acceptance_rate", s.acceptance_rate()},
                              {"mean_acceptance_length", s.mean_acceptance_length()}};
        }
        std::cout << dump_json(j) << "\n";
      } else if (!stream) {
        std::cout << "prompt: " << prompts[i] << "\n";
        if (params.n > 1) std::cout << "sample " << c.index << ":\n";
        std::cout << prompts[i] << c.text << "\n[" << to_string(c.finish_reason) << ", " << c.token_ids.size()
                  << " tokens]\n\n";
      }
    }
  }
  if (!a.flag("quiet") && !json) {
    // The statistics go to stderr, the completion to stdout: flushed first, so that where both
    // reach one terminal or file the statistics start on their own line.
    std::cout.flush();
    std::fflush(stdout);
    const auto& t = engine.telemetry();
    std::fprintf(stderr, "[%s | %s | steps %llu | KV blocks %d x %d tokens, %s, %.1f MiB | preemptions %llu]\n",
                 engine.model_info().name.c_str(), engine.model_info().backend.c_str(), (unsigned long long)t.step, t.blocks_total,
                 t.block_size, t.kv_dtype.c_str(), double(t.kv_bytes_total) / (1024.0 * 1024.0),
                 (unsigned long long)t.preemptions_total);
    if (cfg.speculative.enabled()) {
      const SpeculativeStats& s = t.speculative_total;
      std::fprintf(stderr, "[speculation %s | %llu drafted, %.1f%% accepted | mean acceptance length %.2f]\n",
                   t.speculative_method.c_str(), (unsigned long long)s.drafted, 100.0 * s.acceptance_rate(),
                   s.mean_acceptance_length());
    }
  }
  return failures ? 1 : 0;
}

std::string usage() {
  return std::string("[flags]\n  --prompt TEXT           a prompt (repeatable; none or empty = BOS only)\n"
                     "  --prompts-file FILE     one prompt per line\n"
                     "  --json                  one JSON object per prompt (per sample) per line\n"
                     "  --trace FILE            write a telemetry snapshot per step as JSON lines\n"
                     "  --ignore-eos            keep generating past EOS\n") +
         chat_flags_usage() +
         sampling_flags_usage() + engine_flags_usage();
}

const std::string kUsage = usage();
CommandRegistration reg({"generate", "generate text for one or more prompts", kUsage.c_str(), run_generate});

}  // namespace
}  // namespace llmwb::cli
