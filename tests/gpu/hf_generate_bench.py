#!/usr/bin/env python3
"""Hugging Face transformers' generate() on the same random-weight model as `llmwb-cli bench
--backend cuda` (a folder written by `llmwb-cli make-model --format safetensors` with the same
--arch and --seed: the same weights as the GGUF): the whole-decode-loop baseline of issue #6.

usage: hf_generate_bench.py MODEL_DIR [N_GEN] [REPS]

Greedy, batch 1, fp16 on the GPU, a one-token prompt (BOS) as `llmwb-cli bench` uses for tg,
every token generated (min_new_tokens = N_GEN, no early stop at EOS). Decode tokens/s =
(N_GEN - 1) / (time(generate N_GEN) - time(generate 1)), so the prompt pass and the set-up
of generate() cancel out; the median of REPS timed runs after one warm-up.
Prints a JSON array in the shape `llmwb-cli bench --json` uses ({"test", "median_ts", ...}),
so run-device.sh logs it as a "===== hf-generate NAME" section and summarize.py reads it."""
import json
import sys
import time


def main():
    model_dir = sys.argv[1]
    n_gen = int(sys.argv[2]) if len(sys.argv) > 2 else 128
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float16).to("cuda").eval()
    bos = model.config.bos_token_id if model.config.bos_token_id is not None else 1
    ids = torch.tensor([[bos]], device="cuda")
    mask = torch.ones_like(ids)

    def run(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                 use_cache=True, pad_token_id=bos)
        torch.cuda.synchronize()
        assert out.shape[1] == 1 + n, out.shape
        return time.perf_counter() - t0

    run(n_gen)   # warm-up: kernels, allocator, cuBLAS handles
    rates = []
    for _ in range(reps):
        t1 = run(1)
        tn = run(n_gen)
        rates.append((n_gen - 1) / max(1e-9, tn - t1))
    rates.sort()
    med = rates[len(rates) // 2]
    params = sum(p.numel() for p in model.parameters())
    result = [{
        "test": f"tg{n_gen}",
        "n_prompt": 0,
        "n_gen": n_gen,
        "median_ts": med,
        "samples_ts": rates,
        "model_n_params": params,
        "model_size": sum(p.numel() * p.element_size() for p in model.parameters()),
        "backend": f"transformers {transformers.__version__} generate, torch {torch.__version__}, fp16, "
                   f"{torch.cuda.get_device_name(0)}",
    }]
    print(f"hf generate: {med:.1f} tok/s decode (runs: {', '.join(f'{r:.1f}' for r in rates)})", file=sys.stderr)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
