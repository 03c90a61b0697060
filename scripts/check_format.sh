#!/usr/bin/env bash
# Fails when a tracked C++ or CUDA source differs from what clang-format makes of it under the
# project's .clang-format, and names each such file. CI runs it before the build, so a change
# lands formatted or not at all. `scripts/check_format.sh --fix` rewrites the files in place.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "check_format: clang-format is not installed (scripts/setup.sh installs it)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh')
if [[ "${1:-}" == --fix ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if ((${#bad[@]} > 0)); then
  echo "check_format: ${#bad[@]} file(s) differ from clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "check_format: run scripts/check_format.sh --fix" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
