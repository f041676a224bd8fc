#!/bin/bash
# check_kernel_prefetches.sh OBJDUMP LIBRARY — every one-token GEMV over repacked quantized
# weights (decode_q4 / decode_q8 / decode_k / decode_other, each SIMD level and tile count) keeps
# its software prefetches (TuningConfig::decode_prefetch). GCC's dead code elimination dropped
# them once, silently: prefetches alone under a branch compiled to nothing (prefetch.h).
set -u
objdump_bin=$1
lib=$2
listing=$("$objdump_bin" -d --no-show-raw-insn -C "$lib") || { echo "$objdump_bin could not read $lib"; exit 1; }
awk '
  /^[0-9a-f]+ <.*qkernels::.*::decode_(q4|q8|k|other)<.*>:$/ { cur = $0; n[cur] = 0; next }
  /^[0-9a-f]+ </ { cur = ""; next }
  cur != "" && /prefetcht0/ { n[cur]++ }
  END {
    total = 0; bad = 0
    for (k in n) { total++; if (n[k] == 0) { bad++; print "no prefetcht0 in " k } }
    print total " decode kernels, " bad " without a prefetch"
    if (total < 8) { print "expected the AVX2 and AVX-512 decode kernels (8 or more)"; exit 1 }
    exit bad > 0
  }' <<<"$listing"
