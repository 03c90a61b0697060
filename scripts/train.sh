#!/usr/bin/env bash
# README command (1): set up, build, and train LeNet on Fashion-MNIST through Troupe's actors.
# Extra arguments go to `troupe train` (e.g. --network mlp --num-epochs 3).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"${JOBS:-$(nproc)}" --target troupe
exec ./build/apps/troupe train --network lenet --dataset fashion-mnist --num-epochs 10 \
  --batch-size 128 --metrics build/lenet-fashion-mnist.jsonl "$@"
