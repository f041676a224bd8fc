#!/usr/bin/env bash
# pack-for-device.sh [BUILD_DIR] [PACK_DIR] — copies the GPU test binaries, llmwb-cli, the one
# shared library the device image may lack (SentencePiece) and stories260K into PACK_DIR
# (default ./gpu-pack, about 15 MB), so that the device machine (which may lack the build
# dependencies: nlohmann-json, SentencePiece, GoogleTest) runs this machine's build. Name
# PACK_DIR in the device tool's `carry` and keep it out of git (.git/info/exclude).
# run-device.sh falls back to building from source when these binaries do not start there.
set -euo pipefail
BUILD="${1:-build}"
PACK="${2:-gpu-pack}"
rm -rf "$PACK"
mkdir -p "$PACK/bin" "$PACK/lib" "$PACK/shared/models"
cp "$BUILD/app/llmwb-cli" "$BUILD/tests/gpu/"test_cuda_* "$BUILD/tests/test_backend_choice" "$PACK/bin/"
[ -x "$BUILD/tests/gpu/test_nccl" ] && cp "$BUILD/tests/gpu/test_nccl" "$PACK/bin/"
for lib in $(ldd "$PACK/bin/llmwb-cli" | awk '/sentencepiece|protobuf/ {print $3}'); do cp -L "$lib" "$PACK/lib/"; done
SHARED="${LLMWB_SHARED_DIR:-../shared}"
cp -r "$SHARED/models/stories260K" "$PACK/shared/models/"
[ -d "$SHARED/models/llama2-tokenizer" ] && cp -r "$SHARED/models/llama2-tokenizer" "$PACK/shared/models/"
du -sh "$PACK"
