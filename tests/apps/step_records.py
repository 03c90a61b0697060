#!/usr/bin/env python3
"""Checks the records of `troupe train --metrics FILE --metrics-every N`: every record has a
wall-clock time, in order; the step records come every N steps, numbered, between their
epoch's start and its epoch record; and the first epoch's rate reaches LR (the config's rate:
no warm-up left unfinished before the decays). With --nodes A,B (a cluster's run) each step
record times some of those nodes (those whose reports reached the scheduler in its window),
over ranks that together are the record's ranks, and each node is timed in some record.

usage: step_records.py FILE EPOCHS EVERY STEPS_PER_EPOCH LR [--nodes NAME,...]"""
import json
import sys


def check_nodes(step_records, nodes):
    # A record holds the reports that reached the scheduler in its window: a node whose
    # reports were still on the wire is missing from that one, but every node is in some.
    seen = set()
    for r in step_records:
        assert set(r["nodes"]) <= set(nodes), (r["step"], r["nodes"])
        seen |= set(r["nodes"])
        ranks = []
        for name, t in r["nodes"].items():
            assert t["step_s"] > 0 and t["wait_s"] >= 0 and t["ranks"], (r["step"], name, t)
            ranks += t["ranks"]
        assert sorted(ranks) == sorted(int(k) for k in r["ranks"]), (r["step"], r["nodes"])
    assert seen == set(nodes), f"nodes {sorted(seen)} timed, expected {sorted(nodes)}"


def main():
    path, epochs, every, steps, lr = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        int(sys.argv[4]), float(sys.argv[5])
    records = [json.loads(line) for line in open(path)]
    assert "config" in records[0], records[0]
    times = [r["time"] for r in records]
    assert all(isinstance(t, (int, float)) and t > 1.7e9 for t in times), times[:3]
    assert times == sorted(times), "records out of time order"
    kinds = [r.get("record") for r in records[1:]]
    epoch_records = [r for r in records[1:] if r.get("record") == "epoch"]
    step_records = [r for r in records[1:] if r.get("record") == "step"]
    assert len(epoch_records) == epochs, f"{len(epoch_records)} epoch records, expected {epochs}"
    assert len(step_records) + len(epoch_records) == len(kinds), set(kinds)
    per_epoch = steps // every
    assert len(step_records) == epochs * per_epoch, \
        f"{len(step_records)} step records, expected {epochs} x {per_epoch}"
    for i, r in enumerate(step_records):
        epoch, k = divmod(i, per_epoch)
        assert r["epoch"] == epoch and r["step"] == epoch * steps + (k + 1) * every, r
        assert abs(r["epoch_progress"] - (epoch + (k + 1) * every / steps)) < 1e-9, r
        assert 0 <= r["accuracy"] <= 1 and r["loss"] > 0 and r["samples_per_s"] > 0, r
    # each epoch's step records lie before its epoch record
    position = {id(r): n for n, r in enumerate(records)}
    for r in step_records:
        line = epoch_records[r["epoch"]]
        assert position[id(r)] < position[id(line)], (r, line)
    if "--nodes" in sys.argv:
        check_nodes(step_records, sys.argv[sys.argv.index("--nodes") + 1].split(","))
    first = max(r["learning_rate"] for r in step_records if r["epoch"] == 0)
    assert abs(first - lr) <= 1e-6 * lr, f"epoch 0 peaks at lr {first}, not {lr}"
    print(f"ok: {len(step_records)} step records, epoch 0 reaches lr {first}")


main()
