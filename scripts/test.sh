#!/usr/bin/env bash
# README command (2): set up, build and run every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
jobs=${JOBS:-$(nproc)}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
cd build
ctest --output-on-failure -j"$jobs" --timeout 900
