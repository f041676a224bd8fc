// unicode_nfc.h — Unicode Normalization Form C (UAX #15), through ICU: the "NFC" normalizer
// of a Hugging Face tokenizer.json (Qwen2/Qwen3), applied before pre-tokenization.
#pragma once

#include <string>
#include <string_view>

namespace llmwb {

// The NFC form of `text` (valid UTF-8). ASCII and text already in NFC come back unchanged
// (checked first, without a copy into UTF-16).
std::string to_nfc(std::string_view text);

}  // namespace llmwb
