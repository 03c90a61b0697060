#!/usr/bin/env bash
# Builds ps-lite (dmlc/ps-lite, outside the project: not a dependency of Troupe) as a static library
# against the system's libzmq and protobuf, then our driver scripts/pslite/model_step.cc against it,
# for scripts/bench_pslite.py (docs/benchmarks.md, "ps-lite side by side on emulated hosts").
#
#   scripts/pslite/build.sh PSLITE_SOURCE_DIR BUILD_DIR
#
# PSLITE_SOURCE_DIR: a checkout of ps-lite (we used commit 15b8adf17e9871ff6112c80e4b290fa38c2b4656,
# e.g. `git -C MIRROR archive 15b8adf... | tar -x -C /tmp/pslite-src`). Needs (Debian):
# `apt-get install -y libzmq3-dev libprotobuf-dev protobuf-compiler`. ps-lite's CMake downloads
# zeromq 4.3.2 when it finds no libzmq; we forbid downloads (FETCHCONTENT_FULLY_DISCONNECTED) so the
# system's libzmq is used or the build stops, and ps-lite's sources are not changed.
# Result: BUILD_DIR/model_step (one binary for every role; DMLC_ROLE picks it).
set -euo pipefail
if (($# != 2)); then
  echo "usage: $0 PSLITE_SOURCE_DIR BUILD_DIR" >&2; exit 2
fi
src="$(cd "$1" && pwd)" || { echo "build.sh: no ps-lite source directory '$1'" >&2; exit 2; }
mkdir -p "$2"; build="$(cd "$2" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
[[ -f "$src/include/ps/ps.h" && -f "$src/CMakeLists.txt" ]] ||
  { echo "build.sh: '$src' is not a ps-lite checkout (no include/ps/ps.h)" >&2; exit 2; }
for need in /usr/include/zmq.h /usr/include/google/protobuf/message.h; do
  [[ -f "$need" ]] || { echo "build.sh: missing $need: apt-get install -y libzmq3-dev libprotobuf-dev protobuf-compiler" >&2; exit 2; }
done
command -v protoc >/dev/null || { echo "build.sh: no protoc: apt-get install -y protobuf-compiler" >&2; exit 2; }

cmake -S "$src" -B "$build/pslite" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
      -DFETCHCONTENT_FULLY_DISCONNECTED=ON
grep -q '^ZMQ_LIBRARY:FILEPATH=/' "$build/pslite/CMakeCache.txt" ||
  { echo "build.sh: ps-lite's CMake did not find the system's libzmq (see $build/pslite/CMakeCache.txt)" >&2; exit 1; }
cmake --build "$build/pslite" -j"${JOBS:-2}" --target pslite

# The driver: C++17, ps-lite's public headers and its generated protobuf header (meta.pb.h).
"${CXX:-g++}" -std=c++17 -O2 -pthread -Wall -Wextra \
  -I"$src/include" -I"$build/pslite" \
  "$here/model_step.cc" -o "$build/model_step" \
  "$build/pslite/libpslite.a" -lprotobuf -lzmq
echo "built $build/model_step"
