// synthetic_vocab.h — a made-up byte-level vocabulary for random models whose vocabulary size
// matches no real tokenizer, and its serialization as a SentencePiece .model file.
//
// Layout (that of Llama's SentencePiece models): 0 <unk>, 1 <s>, 2 </s>, 3..258 the byte
// pieces <0x00>..<0xFF>, then "▁" and the printable ASCII characters, then merged pieces
// ("▁t", "th", "▁th", ...), each the concatenation of two earlier pieces so that BPE can
// reach it. Scores fall with the index, so shorter merges apply first.
#pragma once

#include <string>

#include "format/model_file.h"

namespace llmwb {

// Throws llmwb::Error("vocab", ...) when vocab_size < 259 (3 control + 256 byte pieces).
TokenizerData make_synthetic_vocab(int vocab_size);

// The vocabulary as a serialized sentencepiece.ModelProto (BPE, byte fallback, identity
// normalizer, dummy prefix, extra whitespace kept — like the Llama 2 tokenizer), loadable by
// libsentencepiece. Field numbers from sentencepiece_model.proto.
std::string sentencepiece_model_bytes(const TokenizerData& vocab);

}  // namespace llmwb
