// libFuzzer target: the GGUF parser over arbitrary bytes. Every input must either parse into
// tensor infos whose data lies inside the buffer, or throw llmwb::Error; anything else (a
// crash, a sanitizer report, another exception such as std::bad_alloc) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "llmwb/errors.h"
#include "format/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const llmwb::GgufFile f = llmwb::GgufFile::parse(data, size, "fuzz.gguf");
    for (const auto& [key, value] : f.kvs) (void)value.to_string();
    for (const llmwb::GgufTensorInfo& t : f.tensors) {
      if (t.nbytes == 0 || f.data_offset + t.offset + t.nbytes > size) std::abort();
      // Touch the first and last byte so ASan sees any out-of-bounds view.
      const uint8_t* p = data + f.data_offset + t.offset;
      volatile uint8_t sink = p[0];
      sink = p[t.nbytes - 1];
      (void)sink;
    }
  } catch (const llmwb::Error&) {
  }
  return 0;
}
