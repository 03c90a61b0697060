#!/usr/bin/env bash
# Builds the frame decoder's libFuzzer target with clang (-fsanitize=fuzzer,address,undefined)
# and runs it for a bounded time over the checked-in seeds (tests/cluster/fuzz/corpus; new
# inputs go to a scratch folder, never into the source tree). ctest's cluster:fuzz_frames.
# Usage: scripts/fuzz_frames.sh BUILD_DIR [SECONDS]
# Exit 77 (ctest: skipped) when clang or its fuzzer runtime is missing: never a silent pass.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "$1" && pwd)"
seconds="${2:-30}"
clang="$(command -v clang++ || true)"
if [[ -z "$clang" ]] || ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, long) { return 0; }' \
     | "$clang" -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "fuzz_frames: clang++ with libFuzzer (Debian: clang, libclang-rt-14-dev) not found: skipped"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
includes=()
for layer in kernels io graph actors cluster; do includes+=(-I"$root/$layer/include"); done
"$clang" -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  "${includes[@]}" -I"$build/include" -I"$build/cluster" -I"$root" \
  "$root/tests/cluster/fuzz/frame_fuzzer.cpp" "$root/cluster/frame_codec.cpp" "$root/cluster/frame_body_writer.cpp" \
  "$root/cluster/frame_decoder.cpp" "$root/cluster/frame_decoder_control.cpp" "$build/cluster/schema/wire.capnp.c++" "$root/kernels/tensor.cpp" \
  "$root/kernels/gradient_codec.cpp" \
  "$root/kernels/cpu/device_memory_none.cpp" \
  -lcapnp -lkj -ltbb -o "$work/frame_fuzzer"
mkdir "$work/found"
# A crashing input is kept in the build folder (fuzz-findings/) to reproduce it with
# `frame_fuzzer FILE`; add it to tests/cluster/fuzz/corpus once fixed.
mkdir -p "$build/fuzz-findings"
# -max_len: a few KiB reach every field; -timeout: one input that takes a second is a finding.
"$work/frame_fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=5 -print_final_stats=1 \
  -artifact_prefix="$build/fuzz-findings/" "$work/found" "$root/tests/cluster/fuzz/corpus"
