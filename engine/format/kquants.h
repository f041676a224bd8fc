// kquants.h — quantizers for the GGUF k-quants Q4_K, Q5_K and Q6_K (ggml's block_q4_K /
// block_q5_K / block_q6_K byte layouts; the decoders are in tensor.cpp and define the layout).
//
// A k-quant super-block of 256 elements holds sub-blocks (8 of 32 for Q4_K / Q5_K, 16 of 16
// for Q6_K), each with its own scale (and minimum), and those per-sub-block parameters are
// themselves quantized to 6 (Q4_K / Q5_K) or 8 (Q6_K) bits against one fp16 super-scale.
// The quality of the format depends almost entirely on how each sub-block's scale and minimum
// are chosen, so the quantizer searches for them (docs/QUANTIZATION.md, "k-quant quantizers").
#pragma once

#include <cstdint>

namespace llmwb {

// How a sub-block's scale (and minimum) are chosen.
enum class KQuantFit {
  Search,   // weighted least squares over a range of candidate scales (what quantize_row uses)
  MinMax,   // the naive rule: the sub-block's range mapped onto the code range, no search;
            // kept as the baseline the tests measure the search against
};

// Quantize `cols` floats (a multiple of 256) into `dst` (dtype_row_bytes of the type).
void quantize_row_q4_k(const float* x, uint8_t* dst, int64_t cols, KQuantFit fit = KQuantFit::Search);
void quantize_row_q5_k(const float* x, uint8_t* dst, int64_t cols, KQuantFit fit = KQuantFit::Search);
void quantize_row_q6_k(const float* x, uint8_t* dst, int64_t cols, KQuantFit fit = KQuantFit::Search);

}  // namespace llmwb
