// llmwb/chat_prompt.h — a conversation as a request to the engine: the one path that the
// Chat view, `llmwb-cli generate --chat` and LLM::chat share, so that each sends the model
// the same token ids for the same conversation.
#pragma once

#include <cstdint>
#include <vector>

#include "llmwb/chat_template.h"
#include "llmwb/engine.h"
#include "llmwb/sampling_params.h"

namespace llmwb {

// The chat format of the loaded model: its chat template (GGUF tokenizer.chat_template or
// tokenizer_config.json) recognised, else a guess from its name (recognize_chat_template).
ChatTemplate model_chat_template(const Engine& engine);

// The prompt's token ids (chat_token_ids with the engine's tokenizer): control tokens only
// where the template wrote markers, message contents always plain text, BOS from the template
// where it writes one, else the one the engine puts before every prompt.
std::vector<int> chat_prompt_ids(const Engine& engine, const RenderedChat& chat);

// Queues the rendered chat; the format's end-of-turn strings join params.stop. Returns the
// request id. Throws llmwb::Error as Engine::add_request_tokens does.
uint64_t add_chat_request(Engine& engine, const RenderedChat& chat, ChatFormat format, SamplingParams params);

}  // namespace llmwb
