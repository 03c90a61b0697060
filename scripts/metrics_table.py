#!/usr/bin/env python3
"""Turns `troupe train --metrics FILE` outputs into one Markdown table: a row per epoch, for
each file its validation accuracy (and optionally time and samples/s). Runs without validation
(--no-validation, or epochs --eval-every skips) leave the accuracy cell empty; the run's
configuration record (the file's first line) is not an epoch and is skipped.

usage: scripts/metrics_table.py [--time] LABEL=FILE [LABEL=FILE ...]
"""
import json
import sys


def main(argv):
    with_time = "--time" in argv
    runs = []
    for arg in (a for a in argv if a != "--time"):
        label, _, path = arg.partition("=")
        if not path:
            sys.exit(f"expected LABEL=FILE, got '{arg}'")
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        runs.append((label, [r for r in rows if "epoch" in r]))
    if not runs:
        sys.exit(__doc__)
    header = ["epoch"]
    for label, _ in runs:
        header.append(f"{label} val acc")
        if with_time:
            header += [f"{label} time s", f"{label} samples/s"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for epoch in range(max(len(rows) for _, rows in runs)):
        cells = [str(epoch)]
        for _, rows in runs:
            r = rows[epoch] if epoch < len(rows) else None
            cells.append(f"{r['val_accuracy']:.4f}" if r and "val_accuracy" in r else "")
            if with_time:
                cells += [f"{r['time_s']:.1f}" if r else "", f"{r['samples_per_s']:.0f}" if r else ""]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
