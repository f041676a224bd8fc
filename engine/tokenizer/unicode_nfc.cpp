#include "tokenizer/unicode_nfc.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include <climits>

#include "llmwb/errors.h"

namespace llmwb {

std::string to_nfc(std::string_view text) {
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  if (text.size() > static_cast<size_t>(INT32_MAX)) throw Error("NFC", "text of " + std::to_string(text.size()) + " bytes is too long");
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) throw Error("ICU", std::string("no NFC normalizer: ") + u_errorName(status));
  const icu::StringPiece in(text.data(), static_cast<int32_t>(text.size()));
  if (nfc->isNormalizedUTF8(in, status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  std::string out;
  icu::StringByteSink<std::string> sink(&out, static_cast<int32_t>(text.size()));
  nfc->normalizeUTF8(0, in, sink, nullptr, status);
  if (U_FAILURE(status)) throw Error("ICU", std::string("NFC normalization failed: ") + u_errorName(status));
  return out;
}

}  // namespace llmwb
