#!/usr/bin/env python3
"""The scheduler killed mid-epoch: `troupe launch` starts it again with --resume, the servers
and workers (which trained on) rejoin it, and the run ends with the weights of a run that lost
nothing (docs/operations.md, "A lost scheduler").

usage: scheduler_restart_run.py TROUPE CONFIG SERVERS WORKERS KILL_EPOCH [--at validation] [--by-hand] [troupe flags...]

Runs `troupe launch -n WORKERS -s SERVERS --config CONFIG [flags]`, waits until the scheduler
logs a batch past the middle of epoch KILL_EPOCH (its `Epoch[E] Batch [B]` progress lines past
half the `x N batches` of the start line), or with `--at validation` its `Epoch[E] Train-
accuracy` line (the epoch trained, its validation under way), then SIGKILLs the scheduler (the
launch's child running `--role scheduler`). It must: exit 0; the launcher must say it starts
the scheduler again; the restarted scheduler must say where the run goes on (`the run goes on
at epoch`), every member that it rejoined; the final weights line must equal `troupe train
--config CONFIG [flags]` in one process. Every wait has a deadline, moments come from log lines
(no sleeps ordering events), and the launch's process group is killed at the end whatever
happens, so no process is left behind.

With `--by-hand` every node is a `troupe node` started by this script (no launcher), and after
the kill the script starts the scheduler again itself, as a user would: the same flags with
`--resume` at the same `--scheduler` address. Every node but the killed scheduler must exit 0.

It prints the seconds from the kill to the run going on (the restarted scheduler's `goes on`
line) and to its next progress line.
"""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_run import (Cluster, final_weights, in_process_weights, kill_group,  # noqa: E402  (shared with the
                         require_in_log, require_one_process_weights, start_by_hand,  # other cluster tests)
                         start_launch, work_folder)

BOUND_S = 300


def scheduler_pid(session):
    """The pid of the launch's child that runs `troupe node --role scheduler` (in its session)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if os.getsid(int(entry)) != session:
                continue
        except (OSError, ProcessLookupError):
            continue
        if b"node" in argv and b"--role" in argv and argv[argv.index(b"--role") + 1] == b"scheduler":
            return int(entry)
    return None


def moment_of(line, kill_epoch, at_validation, batches):
    """Whether scheduler output `line` is the moment to kill: a batch past the middle of epoch
    KILL_EPOCH, or (at validation) its training accuracy line."""
    if at_validation:
        m = re.search(r"Epoch\[(\d+)\] Train-accuracy", line)
    else:
        m = re.search(r"Epoch\[(\d+)\] Batch \[(\d+)\]", line)
        m = m if m and batches and int(m.group(2)) * 2 >= batches else None
    return m is not None and m.group(1) == kill_epoch


def going_on_pattern(kill_epoch, at_validation, out):
    """Where the restarted scheduler must say the run goes on: the epoch of the kill. A kill at
    validation is sent on the training accuracy line, and a validation and checkpoint quicker than
    the line's way through the launcher's pipe to this script (a loaded machine) may have let the
    scheduler ask the next epoch first: then that one, which its checkpoint line shows was under way."""
    if at_validation and re.search(rf"checkpoint: saved \S+-{int(kill_epoch) + 1:04d}\.manifest\.json", out.split(
            "launch: starting scheduler again")[0]):
        print(f"note: the kill came after epoch {kill_epoch}'s validation; the run goes on at epoch {int(kill_epoch) + 1}")
        return rf"the run goes on at epoch {int(kill_epoch) + 1}\b"
    return rf"the run goes on at epoch {kill_epoch}\b"


def by_hand(troupe, config, servers, workers, kill_epoch, at_validation, rest, workdir):
    cluster = Cluster(troupe, workdir)
    try:
        port = start_by_hand(cluster, config, int(servers), int(workers), rest)
        deadline = time.time() + BOUND_S
        killed_at = None
        while killed_at is None and time.time() < deadline:
            out = cluster.text("scheduler", "out")
            m = re.search(r"compute\(s\) x (\d+) batches", out)
            batches = int(m.group(1)) if m else None
            if any(moment_of(line, kill_epoch, at_validation, batches) for line in out.splitlines()):
                os.kill(cluster.procs["scheduler"].pid, signal.SIGKILL)
                killed_at = time.time()
                print(f"killed the scheduler (pid {cluster.procs['scheduler'].pid}) by hand")
                break
            if cluster.procs["scheduler"].poll() is not None:
                cluster.fail("the run ended before the kill")
            time.sleep(0.005)
        if killed_at is None:
            cluster.fail("no moment to kill within the bound")
        cluster.procs["scheduler"].wait(10)
        cluster.start("restarted", ["--role", "scheduler", "--scheduler", f"127.0.0.1:{port}", "--resume", "--config",
                                    config, "--server-nodes", servers, "--worker-nodes", workers] + rest)
        codes = cluster.wait_all()
        bad = {n: c for n, c in codes.items() if c != 0 and n != "scheduler"}
        if bad:
            cluster.fail(f"exit statuses {bad}, expected 0 but for the killed scheduler")
        restarted = cluster.text("restarted", "err")
        for pattern in [r"restarted \(--resume\)", rf"the run goes on at epoch {kill_epoch}\b"]:
            if not re.search(pattern, restarted):
                cluster.fail(f"no /{pattern}/ in the restarted scheduler's log")
        for name in cluster.procs:
            if name not in ("scheduler", "restarted") and "rejoined the scheduler at" not in cluster.text(name, "err"):
                cluster.fail(f"{name} does not say it rejoined")
        got = final_weights(cluster.text("restarted", "out"))
        reference = in_process_weights(troupe, config, rest, workdir)
        if not got or got != reference:
            cluster.fail(f"restarted scheduler's run: {got}\nin one process: {reference}")
        print(f"ok: the scheduler killed in epoch {kill_epoch} and restarted by hand with --resume; every other node "
              f"exits 0; {got} as in one process")
    finally:
        left = cluster.kill_all()
        if left:
            raise SystemExit(f"FAIL: processes survive SIGKILL: {left}")


def check_metrics(path, out):
    """The metrics file the lost scheduler began and the restarted one appended to: whole JSON
    lines, the config record, one `resumed` record, and each epoch's line exactly once."""
    import json
    rows = [json.loads(line) for line in open(path).read().splitlines()]
    if not rows or "config" not in rows[0]:
        raise SystemExit(f"FAIL: {path} does not start with the config record\n{out[-3000:]}")
    resumed = [r for r in rows if "resumed" in r]
    epochs = [int(r["epoch"]) for r in rows if "epoch" in r]
    if len(resumed) != 1 or not epochs or sorted(epochs) != list(range(len(epochs))):
        raise SystemExit(f"FAIL: {path}: {len(resumed)} resumed record(s), epoch lines {epochs}\n{out[-3000:]}")
    print(f"metrics file: the config record, one resumed record, epochs {epochs} once each")


def main(workdir):
    troupe, config, servers, workers, kill_epoch = sys.argv[1:6]
    rest = sys.argv[6:]
    at_validation = rest[:2] == ["--at", "validation"]
    if at_validation:
        rest = rest[2:]
    hand = rest[:1] == ["--by-hand"]
    if hand:
        rest = rest[1:]
    if hand:
        return by_hand(troupe, config, servers, workers, kill_epoch, at_validation, rest, workdir)
    command = [troupe, "launch", "-n", workers, "-s", servers, "--config", config] + rest
    started = time.time()
    proc = start_launch(command, workdir)
    seen = []
    try:
        deadline = time.time() + BOUND_S
        killed_at = going_on_at = training_at = None
        progress = re.compile(r"\[scheduler\] Epoch\[(\d+)\] Batch \[(\d+)\]")
        batches = None
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            m = re.search(r"compute\(s\) x (\d+) batches", line)
            if m:
                batches = int(m.group(1))
            m = progress.search(line)
            scheduler_says = line.startswith("[scheduler] ")
            if killed_at is None and scheduler_says and moment_of(line, kill_epoch, at_validation, batches):
                victim = scheduler_pid(proc.pid)
                if victim is None:
                    raise SystemExit("FAIL: no process runs the scheduler")
                os.kill(victim, signal.SIGKILL)
                killed_at = time.time()
                print(f"killed the scheduler (pid {victim}) at {line.strip()}")
            elif m and going_on_at and training_at is None:
                training_at = time.time()
            if killed_at and going_on_at is None and "the run goes on at epoch" in line:
                going_on_at = time.time()
        proc.wait(max(1, deadline - time.time()))
        wall = time.time() - started
        out = "".join(seen)
        if proc.returncode != 0:
            raise SystemExit(f"FAIL: launch exited {proc.returncode}\n{out[-5000:]}")
        if killed_at is None:
            raise SystemExit(f"FAIL: the run ended before the kill\n{out[-3000:]}")
        patterns = [r"launch: scheduler \(pid \d+\) killed by signal 9", r"launch: starting scheduler again",
                    r"scheduler: restarted \(--resume\)", going_on_pattern(kill_epoch, at_validation, out),
                    r"lost the scheduler at .*training goes on here"]
        patterns += [rf"rejoined as server_{r}\b" for r in range(int(servers))]
        patterns += [rf"rejoined as worker_{r}\b" for r in range(int(workers))]
        require_in_log(out, patterns)
        if "--metrics" in rest:  # appended to by the restarted scheduler: every epoch's line once
            check_metrics(os.path.join(workdir, rest[rest.index("--metrics") + 1]), out)
        got = require_one_process_weights(troupe, config, rest, workdir, out, "restarted scheduler's run")
        for line in out.splitlines():
            if re.search(r"lost the scheduler|again|restarted|rejoined|goes on at|unlogged|killed by signal", line):
                print(line)
        print(f"kill to the run going on: {going_on_at - killed_at:.3f} s")
        print(f"launch, start to exit: {wall:.3f} s")
        if training_at:
            print(f"kill to the next progress line: {training_at - killed_at:.3f} s")
        print(f"ok: the scheduler killed in epoch {kill_epoch}, restarted and rejoined; exit 0; {got} as in one process")
    finally:
        kill_group(proc.pid)


if __name__ == "__main__":
    with work_folder("troupe-scheduler-restart-") as folder:
        main(folder)
