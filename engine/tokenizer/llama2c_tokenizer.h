// llama2c_tokenizer.h — reading the tokenizer .bin that llama2.c's tokenizer.py exports.
//
// Layout (llama2.c, tokenizer.py export()): int32 max_token_length, then for every piece in
// id order: float32 score, int32 byte length, the bytes. The exporter writes "▁" as ' ', BOS
// as "\n<s>\n" and EOS as "\n</s>\n"; the reader undoes all three so that the pieces read
// back are SentencePiece's. The file does not store the piece count: pieces run to its end.
#pragma once

#include <string>

#include "format/model_file.h"

namespace llmwb {

// All pieces of the file, with scores and inferred types (<unk> unknown, <s> and </s>
// control, <0xNN> byte). Throws llmwb::Error(path, ...) naming the piece index on a
// truncated file, a negative or absurd length, or a non-numeric score.
TokenizerData read_llama2c_tokenizer(const std::string& path);

}  // namespace llmwb
