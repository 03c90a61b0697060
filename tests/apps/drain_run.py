#!/usr/bin/env python3
"""A worker process sent SIGTERM mid-run drains: it asks the scheduler to move its computes to
another worker, leaves with exit status 0, and the run ends with the weights of a run that lost
nothing; or, where its computes cannot move, the scheduler refuses and the worker trains on to
the end (docs/operations.md, "A worker that leaves").

usage: drain_run.py TROUPE CONFIG SERVERS WORKERS EPOCH granted|refused [troupe flags...]

Runs `troupe launch -n WORKERS -s SERVERS --config CONFIG [flags]` (granted: with
`--on-worker-loss adopt`; refused: with `--on-worker-loss stop`), waits until the scheduler logs
a batch past the middle of epoch EPOCH, then sends SIGTERM to the last worker process (its pid
from the scheduler's `worker R (pid P ...)` line). It must exit 0 with the final weights of
`troupe train --config CONFIG [flags]` in one process, and:
  granted   the worker says it asks to leave and is drained; the scheduler grants the leave,
            names the worker that left and the one that adopts its computes, and says when
            that one serves them; the launcher reports no failed child, and the worker's events
            file records its end as finished with code 0;
  refused   the scheduler refuses naming why; the worker says it is not drained and trains on;
            nothing is adopted.
Every wait has a deadline, moments come from log lines (no sleeps ordering events), and the
launch's process group is killed at the end whatever happens, so no process is left behind.
"""
import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_run import (MidEpochKill, kill_group, require_in_log, require_one_process_weights,  # noqa: E402
                         start_launch, watch_launch, work_folder)  # (shared)

BOUND_S = 300


def end_record(events_dir, node):
    """The `end` record of `node`'s events file (troupe launch --events DIR)."""
    path = os.path.join(events_dir, f"{node}.jsonl")
    if not os.path.exists(path):
        raise SystemExit(f"FAIL: no events file {path}: {sorted(os.listdir(events_dir))}")
    ends = [r for r in map(json.loads, open(path)) if r.get("event") == "ended"]
    if len(ends) != 1:
        raise SystemExit(f"FAIL: {path} holds {len(ends)} end records")
    return ends[0]


def main(workdir):
    troupe, config, servers, workers, epoch, outcome = sys.argv[1:7]
    rest = sys.argv[7:]
    if outcome not in ("granted", "refused"):
        raise SystemExit(f"usage: drain_run.py TROUPE CONFIG SERVERS WORKERS EPOCH granted|refused: not {outcome}")
    events = os.path.join(workdir, "events")
    policy = "adopt" if outcome == "granted" else "stop"
    command = [troupe, "launch", "-n", workers, "-s", servers, "--events", events, "--config", config,
               "--on-worker-loss", policy] + rest
    proc = start_launch(command, workdir)
    try:
        rank = int(workers) - 1
        term = MidEpochKill("worker", rank, epoch, signal.SIGTERM)
        served_at = None

        def see(line):
            nonlocal served_at
            if not term.see(line) and term.killed_at and served_at is None and "serves the computes of" in line:
                served_at = time.time()

        out = watch_launch(proc, BOUND_S, see)
        if term.killed_at is None:
            raise SystemExit(f"FAIL: the run ended before the SIGTERM\n{out[-3000:]}")
        pid = term.victim
        node = f"worker_{rank}"
        asked = [rf"{node}: asked to leave \(SIGTERM\) at ",
                 rf"scheduler: worker {rank} \(pid {pid} [^)]*\) asks to leave \(SIGTERM\); "]
        if outcome == "granted":
            patterns = asked + [
                rf"asks to leave \(SIGTERM\); granted: compute_\d+(, compute_\d+)* move to another worker",
                rf"{node}: drained at ",
                rf"scheduler: worker {rank} \(pid {pid} [^)]*\) left at [^;]* \(drained: SIGTERM\); "
                rf"worker \d+ \(pid \d+ [^)]*\) adopts compute_",
                rf"serves the computes of {node}"]
            require_in_log(out, patterns)
            if re.search(rf"lost worker {rank} \(pid {pid}|launch: {node} \(pid \d+\) (exited|killed)", out):
                raise SystemExit(f"FAIL: the drained worker counts as a failure\n{out[-4000:]}")
            end = end_record(events, node)
            if end.get("outcome") != "finished" or end.get("code") != 0:
                raise SystemExit(f"FAIL: {node}'s events end with {end}, not finished with status 0")
        else:
            patterns = asked + [rf"refused: its computes move to other workers only under on_worker_loss = adopt",
                                rf"{node}: not drained: ", rf"; it trains on"]
            require_in_log(out, patterns)
            if "adopts compute_" in out or f"{node}: drained" in out:
                raise SystemExit(f"FAIL: a refused leave moved computes\n{out[-4000:]}")
        got = require_one_process_weights(troupe, config, rest, workdir, out, f"run with a {outcome} leave")
        for line in out.splitlines():
            if re.search(r"leave|drained|adopts|serves the computes|trains on", line):
                print(line)
        if served_at:
            print(f"SIGTERM to the computes served again: {served_at - term.killed_at:.3f} s")
        print(f"ok: worker {rank} sent SIGTERM in epoch {epoch}, leave {outcome}; exit 0; {got} as in one process")
    finally:
        kill_group(proc.pid)


if __name__ == "__main__":
    with work_folder("troupe-drain-") as folder:
        main(folder)
