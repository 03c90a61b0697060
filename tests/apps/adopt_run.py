#!/usr/bin/env python3
"""A worker process killed mid-run is adopted, and the run ends with the weights of a run that
lost nothing (on_worker_loss = adopt; docs/operations.md, "A lost worker").

usage: adopt_run.py TROUPE CONFIG SERVERS WORKERS KILL_EPOCH [--spares K] [--timeline]
                    [--accuracy-within POINTS] [troupe flags...]

With --spares K (given to troupe launch) the spare must be the one that takes the place.
With --accuracy-within POINTS (a run that is not deterministic: async, ssp, local_sync) the final validation
accuracy, in percentage points, must be within POINTS of the same launch without a kill, rather
than the weights equal to one process's.
With --timeline (given to troupe launch, as FILE in the work folder) the merged timeline must
pass tests/apps/check_timeline.py without the killed worker's part (it wrote none) and hold the
scheduler's `lost` and `adoption` instants.

Runs `troupe launch -n WORKERS -s SERVERS --config CONFIG --on-worker-loss adopt [flags]`,
waits until the scheduler logs a batch past the middle of epoch KILL_EPOCH (its progress lines,
`Epoch[E] Batch [B]` past half the `x N batches` the start line names), then SIGKILLs the last worker process (its pid from the scheduler's
`worker R (pid P ...) joined` line). It must: exit 0; the scheduler must name the lost worker
and the adopter (`adopts compute_...`) and say when the adopter serves them; the final weights
line must equal `troupe train --config CONFIG [flags]` in one process. Every wait has a
deadline, moments come from log lines (no sleeps ordering events), and the launch's process
group is killed at the end whatever happens, so no process is left behind.

It prints the seconds from the kill to training again: to the adopter's line saying where its
adopted compute recomputes from (detection, adoption, and the rewind of the weights).
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_run import (MidEpochKill, kill_group, require_in_log, require_one_process_weights,  # noqa: E402
                         start_launch, watch_launch, work_folder)  # (shared)

BOUND_S = 300


def main(workdir):
    troupe, config, servers, workers, kill_epoch = sys.argv[1:6]
    rest = sys.argv[6:]
    launch_only, timeline, within = [], None, None
    while rest[:1] in (["--spares"], ["--timeline"], ["--accuracy-within"]):
        if rest[0] == "--accuracy-within":
            within, rest = float(rest[1]), rest[2:]
        elif rest[0] == "--timeline":
            timeline = os.path.join(workdir, "timeline.json")
            launch_only, rest = launch_only + ["--timeline", timeline], rest[1:]
        else:
            launch_only, rest = launch_only + rest[:2], rest[2:]
    command = [troupe, "launch", "-n", workers, "-s", servers] + launch_only \
        + ["--config", config, "--on-worker-loss", "adopt"] + rest
    proc = start_launch(command, workdir)
    try:
        victim_rank = int(workers) - 1
        kill = MidEpochKill("worker", victim_rank, kill_epoch)
        served_at = None

        def see(line):
            nonlocal served_at
            if not kill.see(line) and kill.killed_at and served_at is None and "recomputes from step" in line:
                served_at = time.time()

        out = watch_launch(proc, BOUND_S, see)
        killed_at, victim = kill.killed_at, kill.victim
        if killed_at is None:
            raise SystemExit(f"FAIL: the run ended before the kill\n{out[-3000:]}")
        m = re.search(r"recomputes from step (\d+) \(epoch (\d+), batch (\d+) of (\d+)\)", out)
        if not m:
            raise SystemExit(f"FAIL: no adopted compute says where it recomputes from\n{out[-5000:]}")
        if m.group(2) != kill_epoch or not 0 < int(m.group(3)) < int(m.group(4)):
            raise SystemExit(f"FAIL: the kill did not land inside epoch {kill_epoch}'s training: {m.group(0)}")
        patterns = [rf"lost worker {victim_rank} \(pid {victim}", r"adopts compute_", r"serves the computes of worker_",
                    r"adopted worker_"]
        if "--spares" in launch_only:  # the spare, not a survivor, takes the place
            patterns += [r"spare worker \(pid \d+ [^)]*\) joined as a spare",
                         r"spare worker \d+ \(pid \d+ [^)]*\) adopts compute_.* \(a spare, idle until now",
                         r"\[spare 0\] worker_\d+: adopted worker_\d+ \(.*\) as a spare"]
        require_in_log(out, patterns)
        if within is None:
            got = require_one_process_weights(troupe, config, rest, workdir, out, "adopted run")
        else:
            got = accuracy_near_the_unharmed(command, workdir, out, within)
        for line in out.splitlines():
            if re.search(r"lost worker|adopt|serves the computes|killed by signal", line):
                print(line)
        if timeline:
            check_faults_on_timeline(timeline, int(servers) + int(workers))
        print(f"kill to training again: {served_at - killed_at:.3f} s")
        print(f"ok: worker {victim_rank} killed in epoch {kill_epoch}, adopted; exit 0; {got}"
              + (" as in one process" if within is None else ""))
    finally:
        kill_group(proc.pid)


def final_accuracy(out, what):
    found = re.findall(r"\[scheduler\] Epoch\[\d+\] Validation-accuracy=([0-9.]+)", out)
    if not found:
        raise SystemExit(f"FAIL: {what} logged no validation accuracy\n{out[-3000:]}")
    return float(found[-1])


def accuracy_near_the_unharmed(command, workdir, out, within):
    """The adopted run's final validation accuracy is within `within` points of the same launch
    run again without a kill; returns both, as words."""
    adopted = final_accuracy(out, "the adopted run")
    proc = start_launch(command, workdir)
    try:
        unharmed = final_accuracy(watch_launch(proc, BOUND_S, lambda line: None), "the run without a kill")
    finally:
        kill_group(proc.pid)
    gap = abs(adopted - unharmed) * 100
    if gap > within:
        raise SystemExit(f"FAIL: the adopted run's validation accuracy {adopted:.4f} is {gap:.2f} points "
                         f"from the run without a kill ({unharmed:.4f}); at most {within} allowed")
    return f"validation accuracy {adopted:.4f}, {unharmed:.4f} without a kill ({gap:.2f} points apart)"


def check_faults_on_timeline(path, nodes):
    """The merged timeline of every node but the killed one, with the scheduler's faults."""
    checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_timeline.py")
    subprocess.run([sys.executable, checker, path, str(nodes)], check=True)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    faults = {e["name"] for e in events if e["ph"] == "i" and e["pid"] == 1}
    if not {"lost", "adoption"} <= faults:
        raise SystemExit(f"FAIL: the scheduler's timeline holds the faults {sorted(faults)}, "
                         "not lost and adoption")
    print(f"timeline: the scheduler's faults {sorted(faults)}")


if __name__ == "__main__":
    with work_folder("troupe-adopt-") as folder:
        main(folder)
