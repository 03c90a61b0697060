#!/usr/bin/env python3
"""Checks a troupe --metrics JSONL file: every epoch has the required fields and the last
epoch's val_accuracy is at least the given bound.  usage: metrics_min.py FILE EPOCHS MIN_ACC"""
import json
import sys

path, epochs, bound = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
lines = [json.loads(line) for line in open(path)]
# `troupe train` opens the file with one record of the run's configuration.
assert "config" in lines[0] and all("config" not in r for r in lines[1:]), lines[:2]
rows = lines[1:]
required = {"epoch", "train_accuracy", "val_accuracy", "train_loss", "time_s", "samples_per_s"}
assert len(rows) == epochs, f"{len(rows)} epochs in {path}, expected {epochs}"
for i, row in enumerate(rows):
    missing = required - row.keys()
    assert not missing, f"epoch {i} lacks {sorted(missing)}"
    assert row["epoch"] == i, row
    assert row["samples_per_s"] > 0 and row["time_s"] > 0, row
assert rows[-1]["val_accuracy"] >= bound, f"val_accuracy {rows[-1]['val_accuracy']} < {bound}"
print(f"ok: {epochs} epochs, final val_accuracy {rows[-1]['val_accuracy']:.4f}")
