#!/usr/bin/env bash
# bench_gui_overhead.sh — generation throughput with the GUI open (live chart on screen) against
# headless, in interleaved pairs, under a private Xvfb. Prints one line per run and the medians.
#
#   tools/bench_gui_overhead.sh [LLMWB_BINARY...]        (default: build/app/gui/llmwb)
#
# Environment: MODEL (default: stories260K.bin from the shared models, 511 tokens per greedy
# generation), THREADS (engine threads, default 1 = the GUI's automatic choice on 2 cores),
# GENERATIONS (per run, default 20), PAIRS (default 5), VIEW (dock raised: throughput, kv,
# timeline, attention or none; default throughput), AB (1: the in-process A/B mode instead,
# below), PHASE_MS (A/B phase length, default 250), EXTRA (more llmwb flags, e.g.
# "--max-tokens 300").
#
# AB=1 runs `llmwb --bench-gui N --bench-ab` PAIRS times (per binary, interleaved): each run
# alternates live phases (everything drawn) and quiet ones (nothing delivered or drawn) inside
# one process and compares the engine's own steps in adjacent phases, so the drift between
# separate runs on a shared machine drops out. Reported per run and as medians over runs: the
# position-matched overhead (median over phase pairs, and pooled), the raw one, tok/s per
# phase, the raised view's draws/s and ms per draw in the live phases.
#
# Each pair runs `llmwb --bench-gui N --bench-headless` (the engine driven from the main
# thread, no window: what llmwb-cli does) and `llmwb --bench-gui N` (the real window, the
# Completion tab streaming, the chosen chart dock raised), in alternating order. Reported:
# tok/s of engine time for both, the overhead (1 - gui/headless), and CPU per 1000 tokens of
# the GUI thread and of the X server, which contention from other processes does not inflate
# the way it inflates rates. With several binaries (e.g. before/after a change) the runs of
# all binaries are interleaved too.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bins=("$@")
[ ${#bins[@]} -eq 0 ] && bins=("$here/build/app/gui/llmwb")
model="${MODEL:-$(cd "$here/.." && pwd)/shared/models/stories260K/stories260K.bin}"
[ -f "$model" ] || model=/work/shared/models/stories260K/stories260K.bin
threads="${THREADS:-1}"
generations="${GENERATIONS:-20}"
pairs="${PAIRS:-5}"
view="${VIEW:-throughput}"
ab="${AB:-0}"
phase_ms="${PHASE_MS:-250}"
read -r -a extra <<<"${EXTRA:-}"

display=":$((90 + RANDOM % 500))"
Xvfb "$display" -screen 0 1920x1080x24 -nolisten tcp >/dev/null 2>&1 &
xvfb_pid=$!
trap 'kill $xvfb_pid 2>/dev/null || true' EXIT
sleep 1
export DISPLAY="$display" XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/llmwb-bench-runtime}"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

# CPU seconds the X server has used so far (utime + stime).
xvfb_cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$xvfb_pid/stat"; }

out="$(mktemp)"
if [ "$ab" = 1 ]; then
  # One line per A/B run.
  summary='
import json, sys
j = json.loads(sys.stdin.read()); a = j["ab"]; l, q = a["live"], a["quiet"]
print("%s run %s: overhead %.1f%% (pooled %.1f, raw %.1f), %d pairs, live %.1f tok/s, quiet %.1f tok/s, "
      "%.1f draws/s x %.2f ms, quiet draws %d" % (sys.argv[1], sys.argv[2], a["overhead_pct_median"],
      a["overhead_pct_pooled"], a["overhead_raw_pct_median"], a["pairs"], l["tok_s"], q["tok_s"],
      l["draws_per_s"], l["ms_per_draw"], q["draws"]))'
  for ((p = 1; p <= pairs; ++p)); do
    for b in "${bins[@]}"; do
      line="$("$b" --bench-gui "$generations" --bench-ab --bench-phase-ms "$phase_ms" --bench-view "$view" \
        --threads "$threads" "${extra[@]}" "$model" 2>/dev/null)"
      echo "$b|$p|$line" >>"$out"
      echo "$line" | python3 -c "$summary" "$b" "$p"
    done
  done
  python3 - "$out" <<'PY'
import json, statistics, sys
runs = {}
for row in open(sys.argv[1]):
    b, p, line = row.rstrip("\n").split("|", 2)
    runs.setdefault(b, []).append(json.loads(line))
med = statistics.median
print()
for b, js in runs.items():
    a = [j["ab"] for j in js]
    g = js[-1]
    live = lambda k: med(x["live"][k] for x in a)
    quiet = lambda k: med(x["quiet"][k] for x in a)
    print(f"{b}: {len(js)} A/B runs, model {g['model']}, {g['threads']} engine thread(s), view {g['view']}, "
          f"phases ~{a[0]['phase_ms']} ms, {sum(x['pairs'] for x in a)} phase pairs in all")
    per_run = ", ".join("%.1f" % x["overhead_pct_median"] for x in a)
    print(f"  overhead median over runs {med(x['overhead_pct_median'] for x in a):.1f}% (per run: {per_run}); "
          f"pooled {med(x['overhead_pct_pooled'] for x in a):.1f}%, raw {med(x['overhead_raw_pct_median'] for x in a):.1f}%")
    every = [o for x in a for o in x["overhead_pct_per_pair"]]
    if every:
        print(f"  median over all {len(every)} phase pairs {med(every):.1f}%")
    print(f"  tok/s median: live {live('tok_s'):.1f}, quiet {quiet('tok_s'):.1f}")
    print(f"  live phases: {g['view']} view {live('draws_per_s'):.1f} draws/s, {live('ms_per_draw'):.2f} ms per draw "
          f"(GUI thread CPU), GUI thread CPU {100 * live('gui_thread_cpu_share'):.1f}% of the time "
          f"(quiet {100 * quiet('gui_thread_cpu_share'):.1f}%, quiet draws {sum(x['quiet']['draws'] for x in a):.0f})")
PY
  rm -f "$out"
  exit 0
fi
for ((p = 1; p <= pairs; ++p)); do
  for b in "${bins[@]}"; do
    order=(headless gui)
    ((p % 2 == 0)) && order=(gui headless)
    for mode in "${order[@]}"; do
      if [ "$mode" = headless ]; then
        line="$("$b" --bench-gui "$generations" --bench-headless --threads "$threads" "$model" 2>/dev/null)"
        x=0
      else
        x0="$(xvfb_cpu)"
        line="$("$b" --bench-gui "$generations" --bench-view "$view" --threads "$threads" "$model" 2>/dev/null)"
        x="$(awk -v a="$x0" -v b="$(xvfb_cpu)" 'BEGIN{print b - a}')"
      fi
      echo "$b|$p|$x|$line" >>"$out"
      echo "$b pair $p $mode: $line" | cut -c1-220
    done
  done
done

python3 - "$out" <<'PY'
import json, statistics, sys
runs = {}
for row in open(sys.argv[1]):
    b, p, x, line = row.rstrip("\n").split("|", 3)
    j = json.loads(line)
    j["xvfb_cpu_s"] = float(x)
    runs.setdefault(b, {}).setdefault(int(p), {})[j["mode"]] = j
print()
for b, pairs in runs.items():
    ratios, head, gui, gui_ms, x_ms, draws, draw_ms, eng_h, eng_g = [], [], [], [], [], [], [], [], []
    for p, m in sorted(pairs.items()):
        h, g = m["headless"], m["gui"]
        head.append(h["tok_s"]); gui.append(g["tok_s"])
        ratios.append(g["tok_s"] / h["tok_s"])
        gui_ms.append(g["main_thread_cpu_ms_per_1k_tokens"])
        x_ms.append(1e6 * g["xvfb_cpu_s"] / g["tokens"])
        # The raised view's draws. Binaries before those fields report the throughput chart's
        # only, and only its last draw's cost.
        if "view_draws_per_s" in g:
            draws.append(g["view_draws_per_s"]); draw_ms.append(g["view_mean_draw_ms"])
        elif g["view"] == "throughput":
            draws.append(g["throughput_chart_draws_per_s"]); draw_ms.append(g["throughput_chart_last_draw_ms"])
        # The engine's own CPU per 1000 tokens: the main thread headless, the worker in the GUI.
        eng_h.append(h["main_thread_cpu_ms_per_1k_tokens"])
        eng_g.append(1e6 * g["thread_cpu_s"].get("llmwb-engine", 0.0) / g["tokens"])
    med = statistics.median
    print(f"{b}: {len(ratios)} pairs, model {g['model']}, {g['threads']} engine thread(s), view {g['view']}")
    print(f"  headless tok/s median {med(head):.0f}   gui tok/s median {med(gui):.0f}")
    print(f"  overhead median {100 * (1 - med(ratios)):.1f}%  (per pair: {', '.join(f'{100 * (1 - r):.1f}' for r in ratios)})")
    print(f"  GUI thread CPU ms per 1000 tokens median {med(gui_ms):.1f}   X server {med(x_ms):.1f}")
    print(f"  engine CPU ms per 1000 tokens median: headless {med(eng_h):.1f}, with the GUI {med(eng_g):.1f}")
    if draws:
        print(f"  {g['view']} view draws/s median {med(draws):.1f}, ms per draw (GUI thread CPU) median {med(draw_ms):.2f}")
PY
rm -f "$out"
