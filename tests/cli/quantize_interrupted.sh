#!/usr/bin/env bash
# quantize_interrupted.sh CLI WORKDIR — SIGINT (Ctrl-C) and SIGTERM arriving while quantize
# writes OUT.partial remove it, write no OUT, and the process still dies of the signal.
# The write is caught in the act: poll for OUT.partial, stop the process (SIGSTOP), check that
# OUT is not there yet, send the signal, continue it. A write that ends between two polls is
# tried again.
set -euo pipefail
set -m   # background jobs keep SIGINT (a script otherwise starts them with SIGINT ignored)
cli=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
# About 100 MB to write: long enough to be caught.
"$cli" make-model --arch custom --dim 1024 --layers 8 --heads 8 --ffn 2816 --vocab 512 --dtype f16 \
  --out "$work/in.gguf" >/dev/null
out=$work/out.gguf
for sig in INT TERM; do
  caught=0
  for attempt in 1 2 3 4 5 6; do
    rm -f "$out" "$out.partial"
    "$cli" quantize --model "$work/in.gguf" --out "$out" --type q8_0 --quiet &
    pid=$!
    while kill -0 "$pid" 2>/dev/null && [[ ! -e $out.partial ]]; do sleep 0.002; done
    kill -STOP "$pid" 2>/dev/null || true
    if [[ -e $out.partial && ! -e $out ]]; then
      kill "-$sig" "$pid"
      kill -CONT "$pid"
      # Under job control `wait` also returns when the job stops (128 + SIGSTOP): the stop made
      # above may be reported first; wait again for the end.
      stopped=$((128 + $(kill -l STOP)))
      rc=$stopped
      while [[ $rc == "$stopped" ]]; do
        rc=0
        wait "$pid" || rc=$?
      done
      want=$((128 + $(kill -l "$sig")))
      [[ $rc == "$want" ]] || { echo "SIG$sig: exit status $rc, expected $want (death by the signal)"; exit 1; }
      [[ ! -e $out.partial ]] || { echo "SIG$sig: $out.partial was left behind"; exit 1; }
      [[ ! -e $out ]] || { echo "SIG$sig: $out was written"; exit 1; }
      echo "SIG$sig during the write (try $attempt): exit $rc, no $out.partial, no $out"
      caught=1
      break
    fi
    kill -CONT "$pid" 2>/dev/null || true
    wait "$pid" || true
  done
  [[ $caught == 1 ]] || { echo "SIG$sig: the write always ended before it could be interrupted"; exit 1; }
done
rm -rf "$work"
echo "interrupted quantize leaves nothing behind"
