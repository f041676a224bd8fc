#!/bin/bash
# bench_issue2.sh — the CPU figures issue #2 asks for, in rounds: for each model pp128 and
# pp512 against the peak FMA rate measured beside each test (--peak), tg128, then the
# machine's memory bandwidth (roofline); JSON per test under OUTDIR, and a summary table.
#   tools/bench_issue2.sh [CLI] [OUTDIR]     env: ROUNDS (3), MODELS (dir, models-local),
#                                            PP_REPS (5), TG_REPS (3)
# Runs at nice -10 where allowed (root), not SCHED_FIFO: a real-time bench that keeps both
# vCPUs busy hits the kernel's RT throttling (sched_rt_runtime_us 950000 of every 1000000),
# which stops it for 50 ms each second: one repetition in ten of a 100 ms pp128 read ~30 % slow.
set -euo pipefail
CLI=${1:-build/app/llmwb-cli}
OUT=${2:-bench-issue2}
ROUNDS=${ROUNDS:-3}
MODELS=${MODELS:-models-local}
PP_REPS=${PP_REPS:-5}
TG_REPS=${TG_REPS:-3}
PRIO=()
if nice -n -10 true 2>/dev/null; then PRIO=(nice -n -10); fi
mkdir -p "$OUT"
for r in $(seq "$ROUNDS"); do
  for m in llama-110m-f32 tinyllama-1.1b-f32 tinyllama-1.1b-f16; do
    f="$MODELS/$m.gguf"
    [ -f "$f" ] || { echo "missing $f (llmwb-cli make-model, see docs/BENCHMARKS.md)" >&2; exit 1; }
    "${PRIO[@]}" "$CLI" bench --model "$f" -p 128,512 -n 0 -r "$PP_REPS" --threads 2 --peak --json > "$OUT/r$r-$m-pp.json"
    "${PRIO[@]}" "$CLI" bench --model "$f" -p 0 -n 128 -r "$TG_REPS" --threads 2 --json > "$OUT/r$r-$m-tg.json"
  done
  "${PRIO[@]}" "$CLI" roofline --threads 2 --json > "$OUT/r$r-roofline.json"
  echo "round $r done" >&2
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(out, "r*-*.json"))):
    name = os.path.basename(path)[:-5]
    rnd, rest = name.split("-", 1)
    if rest == "roofline":
        continue
    model, kind = rest.rsplit("-", 1)
    bw = json.load(open(os.path.join(out, rnd + "-roofline.json")))["bandwidth_gbps"]["read"]
    for t in json.load(open(path)):
        cell = rows.setdefault((model, t["test"]), [])
        if kind == "pp":
            cell.append("%s %.0f t/s %.1f%% (peak %.0f)" % (rnd, t["median_ts"], 100 * t["fraction_of_peak"],
                                                            max(t["peak_gflops_before"], t["peak_gflops_after"])))
        else:
            gbs = t["median_ts"] * t["decode_weight_bytes"] / 1e9
            cell.append("%s %.2f t/s %.1f GB/s = %.0f%% of read %.1f" % (rnd, t["median_ts"], gbs, 100 * gbs / bw, bw))
for (model, test), cells in sorted(rows.items()):
    print("%-20s %-6s %s" % (model, test, " | ".join(cells)))
PY
