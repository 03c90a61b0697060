#!/usr/bin/env bash
# Packs what the GPU verification runs on a GPU machine that has CUDA, cuDNN and PyTorch
# but none of our Debian packages (the device machines: no package registry there). Built here,
# carried there, run there with scripts/gpu_verify.sh.
#
# Usage: scripts/gpu_bundle.sh BUILD_DIR OUT_DIR
#   BUILD_DIR  a CUDA build (TROUPE_CUDA=ON or AUTO with nvcc found), e.g. build
#   OUT_DIR    folder to write troupe-gpu.tar.xz into (keep it git-ignored: it travels as a
#              carried path, 64 MiB at most)
#
# The tarball holds bin/ (troupe, troupe_cuda_tests), lib/ (every shared library they need
# that is not CUDA's, cuDNN's, cuBLAS's or the C library's: those come from the GPU machine,
# whose own versions match its driver), data/fashion-mnist (the idx files of
# dataset-fashion-mnist) and scripts/bench_pytorch_gpu.py.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "$1" && pwd)"
mkdir -p "$2"
out="$(cd "$2" && pwd)"
binaries=("$build/apps/troupe" "$build/tests/kernels/cuda/troupe_cuda_tests")
for b in "${binaries[@]}"; do
  [[ -x "$b" ]] || { echo "gpu_bundle: $b is missing: build with CUDA first" >&2; exit 1; }
done
if ! ldd "$build/apps/troupe" | grep -q libcudart; then
  echo "gpu_bundle: $build/apps/troupe is not linked with CUDA (configure with -DTROUPE_CUDA=ON)" >&2
  exit 1
fi
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/troupe-gpu/bin" "$stage/troupe-gpu/lib" "$stage/troupe-gpu/data" "$stage/troupe-gpu/scripts"
cp "${binaries[@]}" "$stage/troupe-gpu/bin/"
# The GPU machine's own: the C runtime and loader, and everything CUDA (driver-matched).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libcuda|libcudart|libcudnn|libcublas|libnvrtc|libnvJitLink)'
ldd "${binaries[@]}" | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
  [[ "$name" =~ $skip ]] && continue
  cp -L "$path" "$stage/troupe-gpu/lib/$name"
done
cp -r /usr/share/datasets/fashion-mnist "$stage/troupe-gpu/data/"
cp "$root/scripts/bench_pytorch_gpu.py" "$root/scripts/gpu_verify.sh" "$stage/troupe-gpu/scripts/"
tar -C "$stage" -cJf "$out/troupe-gpu.tar.xz" troupe-gpu
ls -la "$out/troupe-gpu.tar.xz"
echo "libraries carried: $(ls "$stage/troupe-gpu/lib" | tr '\n' ' ')"
