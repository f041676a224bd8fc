// tokenizer_json.h — reading a Hugging Face tokenizer.json (the `tokenizers` library's
// serialization) and the tokenizer_config.json beside it into a TokenizerData.
//
// Supported: model type "BPE" over a byte-level alphabet (a ByteLevel pre-tokenizer, alone
// or after a Split whose regex is Llama 3's or Qwen2's), merges as "a b" strings or [a, b]
// pairs, "ignore_merges", an NFC normalizer, and added tokens ("special": true -> control,
// otherwise user defined). Anything else is an llmwb::Error naming the file and what it
// found, so a model whose tokenizer llmwb cannot run is refused instead of mis-tokenized.
#pragma once

#include <cstddef>
#include <string>

#include "format/model_file.h"

namespace llmwb {

// Reads `path` (a tokenizer.json) and, when there is one in the same folder,
// tokenizer_config.json (bos/eos tokens, add_bos_token, chat_template). model = "gpt2".
TokenizerData read_tokenizer_json(const std::string& path);

// Reads chat_template and add_bos_token of a tokenizer_config.json into `t`; with
// `with_special_tokens`, also bos_token / eos_token (looked up in t->pieces).
void read_tokenizer_config(const std::string& path, TokenizerData* t, bool with_special_tokens);

// Pads a vocabulary to `n` pieces with "[PAD<id>]" pieces of type unused (5), as llama.cpp's
// converter does when a model's embedding has more rows than its tokenizer has tokens
// (Qwen2/Qwen3: 151,936 rows, 151,669 tokens). Does nothing when it already has `n` or more.
void pad_vocabulary(TokenizerData* t, size_t n);

}  // namespace llmwb
