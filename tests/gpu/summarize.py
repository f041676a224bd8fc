#!/usr/bin/env python3
"""Reads what run-device.sh wrote into OUT_DIR and writes summary.md and summary.json: the
ceilings, the kernels against them, the engine's decode / prefill / throughput figures
against the issue's targets, and the test results. Prints summary.md."""
import json
import os
import re
import sys


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return []


def sections(path):
    """'===== NAME' headed sections of a log, each with the first JSON array found in it."""
    try:
        text = open(path).read()
    except OSError:
        return {}
    out = {}
    parts = re.split(r"^===== (.*)$", text, flags=re.M)
    for name, body in zip(parts[1::2], parts[2::2]):
        i = body.find("[")
        while i >= 0:
            try:
                out[name.strip()] = json.JSONDecoder().raw_decode(body[i:])[0]
                break
            except ValueError:
                i = body.find("[", i + 1)
    return out


def main():
    out_dir = sys.argv[1]
    figs = {f["name"]: f for f in load_json(os.path.join(out_dir, "gpu-bench.json"))}
    sdpa = {f["name"]: f for f in load_json(os.path.join(out_dir, "sdpa.json"))}
    logs = sections(os.path.join(out_dir, "bench.log"))
    summary = {"ceilings": {}, "kernels": {}, "engine": {}, "targets": {}, "tests": {}}
    lines = ["# CUDA backend on the device", ""]

    copy = figs.get("copy_bandwidth", {}).get("value")
    gemm = figs.get("gemm_bf16", {}).get("value")
    summary["ceilings"] = {"copy_GBps": copy, "gemm_bf16_TFLOPs": gemm}
    lines += ["| ceiling | value |", "|---|---:|",
              f"| device copy bandwidth (read + write) | {copy or 0:.0f} GB/s |",
              f"| cuBLAS bf16 GEMM | {gemm or 0:.0f} TFLOP/s |", ""]

    lines += ["| kernel | value | fraction of ceiling |", "|---|---:|---:|"]
    for name, f in figs.items():
        if name in ("copy_bandwidth", "gemm_bf16"):
            continue
        ceil = copy if f["unit"] == "GB/s" else gemm
        frac = f["value"] / ceil if ceil else 0
        summary["kernels"][name] = {"value": f["value"], "unit": f["unit"], "ms": f["ms"], "fraction": frac}
        lines.append(f"| {name} | {f['value']:.1f} {f['unit']} | {frac:.2f} |")
    for name, f in sdpa.items():
        summary["kernels"][name] = {"value": f["value"], "unit": f["unit"], "ms": f["ms"]}
        lines.append(f"| {name} (PyTorch) | {f['value']:.1f} {f['unit']} | |")
    lines.append("")

    lines += ["| model | test | tok/s | limit | fraction | target |", "|---|---|---:|---:|---:|---|"]
    for sec, arr in logs.items():
        if not sec.startswith("bench "):
            continue
        model = sec[len("bench "):]
        for r in arr:
            ts = r.get("median_ts", 0)
            entry = {"tok_s": ts, "model_size": r.get("model_size"), "n_params": r.get("model_n_params")}
            if r.get("n_gen", 0) > 0 and copy:
                limit = copy * 1e9 / max(1, r.get("model_size", 1))   # every weight byte read once per token
                entry.update(limit=limit, fraction=ts / limit, target=0.75)
                lines.append(f"| {model} | {r['test']} | {ts:.1f} | {limit:.1f} | {ts / limit:.2f} | >= 0.75 of bandwidth |")
            elif r.get("n_prompt", 0) > 0 and gemm:
                tflops = ts * 2 * r.get("model_n_params", 0) / 1e12
                entry.update(tflops=tflops, fraction=tflops / gemm, target=0.5)
                lines.append(f"| {model} | {r['test']} | {ts:.1f} | {gemm * 1e12 / (2 * max(1, r.get('model_n_params', 1))):.1f} "
                             f"| {tflops / gemm:.2f} | >= 0.5 of GEMM |")
            summary["engine"][f"{model} {r.get('test')}"] = entry
    lines.append("")

    # The whole decode loop against transformers' generate on the same weights.
    for sec, arr in logs.items():
        if not sec.startswith("hf-generate ") or not arr:
            continue
        model = sec[len("hf-generate "):]
        hf = arr[0].get("median_ts", 0)
        ours = next((r.get("median_ts", 0) for r in logs.get(f"bench {model}", []) if r.get("n_gen", 0) > 0), 0)
        summary["engine"][f"{model} hf-generate"] = {"tok_s": hf, "llmwb_tok_s": ours, "backend": arr[0].get("backend")}
        lines += ["| decode loop, batch 1 | tok/s |", "|---|---:|",
                  f"| llmwb {model} tg | {ours:.1f} |",
                  f"| {arr[0].get('backend', 'transformers')} | {hf:.1f} |",
                  f"| llmwb / transformers | {ours / hf if hf else 0:.2f}x |", ""]

    sb = logs.get("serve-bench tinyllama-1.1b-f16", [])
    if sb:
        base = sb[0].get("decode_tokens_per_s", 0)
        lines += ["| concurrent sequences | decode tok/s | x batch-1 |", "|---:|---:|---:|"]
        for r in sb:
            tps = r.get("decode_tokens_per_s", 0)
            lines.append(f"| {r.get('concurrency')} | {tps:.0f} | {tps / base if base else 0:.1f} |")
            summary["engine"][f"throughput c{r.get('concurrency')}"] = {"decode_tok_s": tps, "speedup": tps / base if base else 0}
        lines.append("")

    ab = {run: logs.get(f"serve-bench {run} tinyllama-1.1b-f16", []) for run in ("sampled-device", "sampled-host", "greedy-host")}
    if any(ab.values()):
        lines += ["| sampling (serve-bench) | sequences | decode tok/s |", "|---|---:|---:|"]
        greedy_dev = next((r for r in sb if r.get("concurrency") == (ab["greedy-host"] or [{}])[0].get("concurrency")), None)
        rows = [("greedy, on the device", greedy_dev)] + [(run.replace("-", ", on the "), (arr or [None])[0]) for run, arr in ab.items()]
        for name, r in rows:
            if r:
                lines.append(f"| {name} | {r.get('concurrency')} | {r.get('decode_tokens_per_s', 0):.0f} |")
                summary["engine"][f"sampling {name}"] = {"concurrency": r.get("concurrency"), "decode_tok_s": r.get("decode_tokens_per_s", 0)}
        lines.append("")

    # The KV pool types in the same budget, rows grouped by concurrency (f32, f16, int8 each), with
    # decode tok/s against the f32 pool's at that concurrency.
    kv = {name: logs.get(f"serve-bench kv-{name} tinyllama-1.1b-f16", []) for name in ("f32", "f16", "int8")}
    if any(kv.values()):
        lines += ["| KV cache (same budget) | sequences | KV blocks | preemptions | output tok/s | decode tok/s | x f32 |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        f32_tps = {r.get("concurrency"): r.get("decode_tokens_per_s", 0) for r in kv["f32"]}
        rows = [(r.get("concurrency"), i, name, r) for i, (name, arr) in enumerate(kv.items()) for r in arr]
        for c, _, name, r in sorted(rows, key=lambda t: (t[0] or 0, t[1])):
            tps = r.get("decode_tokens_per_s", 0)
            base = f32_tps.get(c)
            ratio = f"{tps / base:.2f}" if base else ""
            lines.append(f"| {name} | {c} | {r.get('kv_blocks_total', 0)} | {r.get('preemptions', 0)} "
                         f"| {r.get('output_tokens_per_s', 0):.0f} | {tps:.0f} | {ratio} |")
            summary["engine"][f"kv {name} c{c}"] = {k: r.get(k) for k in (
                "kv_blocks_total", "preemptions", "output_tokens_per_s", "decode_tokens_per_s")}
        lines.append("")

    try:
        tests = open(os.path.join(out_dir, "tests.log")).read()
    except OSError:
        tests = ""
    exits = {m.group(1): int(m.group(2)) for m in re.finditer(r"^===== (\S+) exit (\d+)$", tests, flags=re.M)}
    summary["tests"].update(exits)
    passed = len(re.findall(r"^\[       OK \]", tests, flags=re.M))
    failed = sorted(set(re.findall(r"^\[  FAILED  \] (\S+)", tests, flags=re.M)))
    skipped = len(re.findall(r"^\[  SKIPPED \] \S+ \(", tests, flags=re.M))
    summary["tests"].update(passed=passed, failed=failed, skipped=skipped)
    # A program that ended without its own verdict (timed out, crashed) fails too, whatever its
    # OK lines say: its remaining tests never ran.
    died = {t: code for t, code in exits.items() if code not in (0, 1)}
    why = {124: "timed out", 134: "aborted", 137: "killed", 139: "crashed (SIGSEGV)"}
    lines += [f"tests: {passed} passed, {len(failed) + len(died)} failed, {skipped} skipped"] + [
        f"  FAILED {t}" for t in failed] + [f"  FAILED {t} (exit {code}: {why.get(code, 'no verdict')})" for t, code in died.items()]

    try:
        bench_log = open(os.path.join(out_dir, "bench.log")).read()
    except OSError:
        bench_log = ""
    broken = re.findall(r"^===== (.*) failed$", bench_log, flags=re.M)
    if not figs:
        broken.insert(0, "gpu-bench")
    if not sdpa:
        broken.append("sdpa")
    summary["failed_benchmarks"] = broken
    if broken:
        lines.append("benchmarks that failed (see bench.log): " + ", ".join(broken))

    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
