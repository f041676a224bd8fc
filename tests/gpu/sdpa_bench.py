#!/usr/bin/env python3
"""PyTorch SDPA on the attention shapes of `llmwb-cli gpu-bench` (Llama-2-7B: 32 heads x 128),
contiguous K/V (SDPA has no block tables), fp32 and bf16: the baseline for our paged kernels.
Prints a JSON array; figures are the median of 20 CUDA-event-timed runs after 5 warm-ups."""
import json
import sys

import torch
import torch.nn.functional as F


def median_ms(fn, reps=20):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    out = []
    heads, hd = 32, 128
    cases = [("decode_b1_ctx8192", 1, 8192, 1), ("decode_b64_ctx2048", 64, 2048, 1), ("prefill_2048", 1, 2048, 2048)]
    for dtype, tag in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
        for name, b, ctx, nq in cases:
            g = torch.Generator(device="cuda").manual_seed(1)
            q = torch.randn(b, heads, nq, hd, device="cuda", dtype=dtype, generator=g)
            k = torch.randn(b, heads, ctx, hd, device="cuda", dtype=dtype, generator=g)
            v = torch.randn(b, heads, ctx, hd, device="cuda", dtype=dtype, generator=g)
            causal = nq > 1
            ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            if nq == 1:
                value, unit = 2 * b * ctx * heads * hd * q.element_size() / (ms * 1e-3) / 1e9, "GB/s"
            else:
                value, unit = 4 * heads * hd * (nq * (nq + 1) / 2) / (ms * 1e-3) / 1e12, "TFLOP/s"
            out.append({"name": f"sdpa_{name}_{tag}", "value": value, "unit": unit, "ms": ms,
                        "detail": f"torch {torch.__version__} SDPA, contiguous K/V, {tag}"})
            print(f"{out[-1]['name']}: {ms:.4f} ms", file=sys.stderr)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
