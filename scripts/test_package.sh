#!/usr/bin/env bash
# Checks Troupe as a library, the way an outside project uses it (examples/embedding/):
#   install       `cmake --install` the build into a temporary prefix
#   find_package  configure the example with only -DCMAKE_PREFIX_PATH=<prefix>; build and run
#                 session_host and shard_host
#   host_caf      the same with -DHOST_DEFINES_CAF=ON (the host defines caf::core / caf::io
#                 before Troupe is found); build and run shard_host
#   subdirectory  configure the example with -DTROUPE_SOURCE_DIR=<this checkout>, which builds
#                 Troupe's libraries again from source (CPU only, ccache when present); build
#                 and run session_host
#
# Usage: scripts/test_package.sh [BUILD_DIR] [installed|subdirectory|all]
#   BUILD_DIR  a complete Troupe build (default: build/); `installed` needs it, `subdirectory`
#              only reads its TROUPE_CPU_BASELINE
#   installed  install + find_package + host_caf;  subdirectory: subdirectory;  all (default)
# Environment: JOBS (parallel build jobs, default 2). Temporary directories are removed on exit.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
what=${2:-all}
jobs=${JOBS:-2}
example=$repo/examples/embedding

case $what in
  installed|subdirectory|all) ;;
  *) echo "test_package: unknown stage set '$what' (installed, subdirectory, all)" >&2; exit 2 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/troupe-package.XXXXXX")
trap 'rm -rf "$work"' EXIT

stage() { echo "== test_package: $* ($(date +%T))"; }

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # The temporary build trees get new names every run: ccache sees paths relative to the
  # build directory, so a rerun hits the cache.
  export CCACHE_BASEDIR=$work
fi

# configure_example <build dir> <cmake args...>: quiet unless it fails.
configure_example() {
  local dir=$1
  shift
  if ! cmake -S "$example" -B "$dir" "${launcher[@]}" "$@" >"$dir.configure.log" 2>&1; then
    cat "$dir.configure.log"
    echo "test_package: configuring $dir failed" >&2
    return 1
  fi
}

# run_program <path>: runs it, shows its last lines; fails when it does.
run_program() {
  local out
  if ! out=$("$1" 2>&1); then
    echo "$out"
    echo "test_package: $(basename "$1") failed" >&2
    return 1
  fi
  echo "$out" | tail -n 3 | sed 's/^/    /'
}

if [[ $what != subdirectory ]]; then
  stage "install: cmake --install $build --prefix $work/prefix"
  cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
  test -f "$work/prefix/lib/cmake/Troupe/TroupeConfig.cmake"

  stage "find_package: configure, build and run examples/embedding against the prefix"
  configure_example "$work/find" -DCMAKE_PREFIX_PATH="$work/prefix"
  cmake --build "$work/find" -j "$jobs" >"$work/find.build.log" \
    || { cat "$work/find.build.log"; exit 1; }
  run_program "$work/find/session_host"
  run_program "$work/find/shard_host"

  stage "host_caf: the host defines caf::core and caf::io before find_package(Troupe)"
  configure_example "$work/host_caf" -DCMAKE_PREFIX_PATH="$work/prefix" -DHOST_DEFINES_CAF=ON
  grep "caf::core is the host's" "$work/host_caf.configure.log" | sed 's/^--/   /'
  cmake --build "$work/host_caf" -j "$jobs" --target shard_host >"$work/host_caf.build.log" \
    || { cat "$work/host_caf.build.log"; exit 1; }
  run_program "$work/host_caf/shard_host"
fi

if [[ $what != installed ]]; then
  baseline=$(sed -n 's/^TROUPE_CPU_BASELINE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
  stage "subdirectory: add_subdirectory($repo), Troupe built from source${baseline:+ for $baseline}"
  configure_example "$work/sub" -DTROUPE_SOURCE_DIR="$repo" -DTROUPE_CUDA=OFF \
    ${baseline:+-DTROUPE_CPU_BASELINE="$baseline"}
  cmake --build "$work/sub" -j "$jobs" --target session_host >"$work/sub.build.log" \
    || { cat "$work/sub.build.log"; exit 1; }
  run_program "$work/sub/session_host"
fi

stage "passed ($what)"
