// libFuzzer target: the safetensors header parser over arbitrary bytes. Any input must either
// parse into views that lie inside the buffer or throw llmwb::Error; anything else (a crash,
// a sanitizer report, another exception type) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "llmwb/errors.h"
#include "format/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const llmwb::SafetensorsFile f = llmwb::SafetensorsFile::parse(data, size, "fuzz.safetensors");
    for (const auto& t : f.tensors) {
      if (t.data < data || t.data + t.nbytes > data + size) std::abort();
      // Touch the first and last byte so ASan sees any out-of-bounds view.
      if (t.nbytes > 0) {
        volatile uint8_t sink = t.data[0];
        sink = t.data[t.nbytes - 1];
        (void)sink;
      }
    }
  } catch (const llmwb::Error&) {
  }
  return 0;
}
