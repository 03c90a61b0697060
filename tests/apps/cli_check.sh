#!/usr/bin/env bash
# Runs the troupe binary and checks its exit status and output.
# usage: cli_check.sh EXPECTED_STATUS PATTERN -- troupe args...
# Passes when the status matches and PATTERN (grep -E) occurs in stdout+stderr.
set -u
expected=$1; pattern=$2; shift 3
output=$("$@" 2>&1)
status=$?
if [[ $status -ne $expected ]]; then
  printf 'expected exit status %s, got %s; output:\n%s\n' "$expected" "$status" "$output"
  exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$output"; then
  printf 'output does not match /%s/:\n%s\n' "$pattern" "$output"
  exit 1
fi
exit 0
