#!/bin/bash
# check_kernel_prefetches.sh OBJDUMP LIBRARY — every one-token GEMV over repacked quantized
# weights keeps its software prefetches (TuningConfig::decode_prefetch). Each kernel is a
# decode_of<type, tiles> symbol (never inlined; the per-type kernels are inlined into it): six
# types x 1-4 tiles at AVX-512 (mask arguments) and x 1-2 tiles at AVX2 (row-count arguments),
# 36 in all, and each must hold a prefetcht0. GCC once deleted them all silently: a small
# prefetch-only helper was found "const" and its calls dropped (prefetch.h).
set -u
objdump_bin=$1
lib=$2
listing=$("$objdump_bin" -d --no-show-raw-insn -C "$lib") || { echo "$objdump_bin could not read $lib"; exit 1; }
awk '
  /^[0-9a-f]+ <.*qkernels::.*::decode_of<.*>:$/ {
    cur = $0
    sub(/^[0-9a-f]+ </, "", cur); sub(/ \[clone [^]]*\]/, "", cur); sub(/>:$/, "", cur)
    if (!(cur in n)) n[cur] = 0
    next
  }
  /^[0-9a-f]+ </ { cur = ""; next }
  cur != "" && /prefetcht0/ { n[cur]++ }
  END {
    avx512 = 0; avx2 = 0; bad = 0
    for (k in n) {
      if (k ~ /unsigned short const\*\)$/) avx512++
      else if (k ~ /int const\*\)$/) avx2++
      if (n[k] == 0) { bad++; print "no prefetcht0 in " k }
    }
    print avx512 " AVX-512 and " avx2 " AVX2 decode kernels, " bad " without a prefetch"
    if (avx512 != 24 || avx2 != 12) { print "expected 24 AVX-512 and 12 AVX2 decode kernels (decode_of)"; exit 1 }
    exit bad > 0
  }' <<<"$listing"
