#!/bin/bash
# Epoch times of a small MLP trained in one process and launched as 4 processes on this host
# (scheduler, 1 server, 2 workers), interleaved round by round so that load and frequency
# drift fall on every variant alike: whether `troupe launch -n 2 -s 1` stays within 1.5x of
# the one-process epoch. Prints every run's `Time cost=` figures, then the median of all epochs
# per variant and its ratio to both one-process variants.
#
#   scripts/bench_launch_epochs.sh [TROUPE_BINARY] [ROUNDS]
set -euo pipefail
troupe=$(realpath "${1:-build/apps/troupe}")
rounds=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cat > mlp.troupe <<'END'
cluster   { servers = 1  workers = 2 }
data      train = fashion_mnist
model     mlp
topology  bsp
train     { epochs = 3  display = 0 }
END
variants=(
  "one process|train --config mlp.troupe --progress off"
  "one process, --threads 1|train --config mlp.troupe --progress off --threads 1"
  "launch -n 2 -s 1|launch -n 2 -s 1 --config mlp.troupe --progress off"
  "launch -n 2 -s 1 --local-sockets off|launch -n 2 -s 1 --config mlp.troupe --progress off --local-sockets off"
  "launch -n 2 -s 1 --host-slot -1 (unbound)|launch -n 2 -s 1 --config mlp.troupe --progress off --host-slot -1"
)
for ((r = 1; r <= rounds; r++)); do
  for v in "${variants[@]}"; do
    label=${v%%|*}
    # shellcheck disable=SC2086 # the arguments are words
    times=$("$troupe" ${v#*|} 2>&1 | sed -n 's/.*Time cost=\([0-9.]*\).*/\1/p' | tr '\n' ' ')
    [ -n "$times" ] || { echo "no epoch times from: troupe ${v#*|}" >&2; exit 1; }
    echo "round $r | $label | $times" | tee -a runs.txt
  done
done
python3 - runs.txt <<'END'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    _, label, times = (part.strip() for part in line.split("|"))
    by.setdefault(label, []).extend(float(t) for t in times.split())
medians = {label: statistics.median(v) for label, v in by.items()}
one, one1 = medians["one process"], medians["one process, --threads 1"]
print(f"\nmedian epoch over {len(next(iter(by.values())))} epochs each:")
for label, m in medians.items():
    print(f"  {label:40s} {m:.3f} s   x{m / one:.2f} of one process   x{m / one1:.2f} of --threads 1")
END
