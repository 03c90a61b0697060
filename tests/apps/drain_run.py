#!/usr/bin/env python3
"""A worker process sent SIGTERM mid-run drains: it asks the scheduler to move its computes to
another worker, leaves with exit status 0, and the run ends with the weights of a run that lost
nothing; or, where its computes cannot move, the scheduler refuses and the worker trains on to
the end (docs/operations.md, "A worker that leaves").

usage: drain_run.py TROUPE CONFIG SERVERS WORKERS EPOCH granted|refused|rejoin|grow|grow-kill-joiner|grow-kill-giver
       [troupe flags...]

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
  rejoin    every node started by hand (`troupe node`, on_worker_loss = adopt); once the last
            worker has drained (exit 0) and its computes run on worker 0, a new worker process
            joins: the scheduler hands it the drained worker's node, taken from worker 0, which
            cedes it at the end of an epoch's training; every node exits 0 with the weights of
            one process.
  grow      every node started by hand; in epoch EPOCH a new worker process joins and takes
            half the computes of the busiest worker, which cedes them at the end of an epoch's
            training; every node exits 0 with the weights of one process.
  grow-kill-joiner, grow-kill-giver
            as grow, then the joiner (or the worker that gave it computes) is SIGKILLed in the
            middle of the next epoch: what it ran is adopted, and every other node exits 0 with
            the weights of one process.
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
from cluster_run import (Cluster, MidEpochKill, final_weights, in_process_weights, kill_group,  # noqa: E402
                         read_port, require_in_log, require_one_process_weights, start_launch,
                         watch_launch, work_folder)  # (shared)

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


def start_ranked(cluster, servers, workers, common, workdir):
    """The scheduler, then every server and worker by hand, each asking for its rank (join order
    must not decide which process is worker 1); returns the scheduler's port."""
    port_file = os.path.join(workdir, "scheduler.port")
    cluster.start("scheduler", ["--role", "scheduler", "--scheduler", "127.0.0.1:0", "--port-file", port_file]
                  + common)
    port = read_port(cluster, port_file)
    for s in range(int(servers)):
        cluster.start(f"server{s}", ["--role", "server", "--scheduler", f"127.0.0.1:{port}", "--rank", str(s)]
                      + common)
    for w in range(int(workers)):
        cluster.start(f"worker{w}", ["--role", "worker", "--scheduler", f"127.0.0.1:{port}", "--rank", str(w)]
                      + common)
    return port


def rejoin(troupe, config, servers, workers, epoch, rest, workdir):
    cluster = Cluster(troupe, workdir)
    try:
        common = ["--config", config, "--server-nodes", servers, "--worker-nodes", workers,
                  "--on-worker-loss", "adopt"] + rest
        port = start_ranked(cluster, servers, workers, common, workdir)
        rank = int(workers) - 1
        victim = f"worker{rank}"
        cluster.wait_for_text("scheduler", "out", rf"Epoch\[{epoch}\] Batch")
        os.kill(cluster.procs[victim].pid, signal.SIGTERM)
        cluster.wait_for_text(victim, "err", rf"worker_{rank}: drained at ")
        if cluster.procs[victim].wait(timeout=BOUND_S) != 0:
            cluster.fail(f"the drained {victim} exited {cluster.procs[victim].returncode}, not 0")
        cluster.wait_for_text("scheduler", "err", rf"serves the computes of worker_{rank} \([0-9.]+ s after it left\)")
        cluster.start("joiner", ["--role", "worker", "--scheduler", f"127.0.0.1:{port}"] + common)
        cluster.wait_for_text("scheduler", "err", rf"spare worker \d+ \(pid \d+ [^)]*\) takes compute_\d+(, compute_\d+)* of worker_{rank} from worker 0")
        codes = cluster.wait_all()
        bad = {n: c for n, c in codes.items() if c != 0}
        if bad:
            cluster.fail(f"exit statuses {bad}, expected 0")
        log = cluster.text("scheduler", "err")
        for pattern in [rf"is ready to serve the computes of worker_{rank} \([0-9.]+ s after it joined\); they move at the end",
                        rf"compute_\d+(, compute_\d+)* of worker_{rank} moved from worker 0 \(pid \d+ [^)]*\) to spare worker \d+ "
                        rf"\(pid \d+ [^)]*\) at the end of epoch \d+'s training"]:
            if not re.search(pattern, log):
                cluster.fail(f"no /{pattern}/ in the scheduler's log")
        if not re.search(rf"worker_0: ceded compute_\d+(, compute_\d+)* of worker_{rank} at ",
                         cluster.text("worker0", "err")):
            cluster.fail("worker 0 does not say it ceded the node")
        got = final_weights(cluster.text("scheduler", "out"))
        expected = in_process_weights(troupe, config, rest, workdir)
        if got != expected:
            cluster.fail(f"the run with a drain and a join ended with {got}, one process with {expected}")
        for line in log.splitlines():
            if re.search(r"leave|left|takes compute|ready to serve|moved from|serves the computes", line):
                print(line)
        print(f"ok: worker {rank} drained in epoch {epoch}, a new worker took its node back from worker 0; "
              f"every node exit 0; {got} as in one process")
    finally:
        cluster.kill_all()


def grow(troupe, config, servers, workers, epoch, rest, workdir, then=None):
    """Every node by hand; a new worker process joins in epoch EPOCH and takes computes from the
    busiest worker (no node is an adopted one): half of what it runs, moved at the end of an
    epoch's training. Then (`then`) the joiner or the worker that gave them is SIGKILLed in the
    middle of the next epoch: what it ran is adopted. Every node exits 0 (but the one killed)
    with the weights of one process."""
    cluster = Cluster(troupe, workdir)
    try:
        common = ["--config", config, "--server-nodes", servers, "--worker-nodes", workers,
                  "--on-worker-loss", "adopt"] + rest
        port = start_ranked(cluster, servers, workers, common, workdir)
        cluster.wait_for_text("scheduler", "out", rf"Epoch\[{epoch}\] Batch")
        cluster.start("joiner", ["--role", "worker", "--scheduler", f"127.0.0.1:{port}"] + common)
        taken = cluster.wait_for_text(
            "scheduler", "err",
            r"spare worker (?:\d+ )?\(pid \d+ [^)]*\) takes (compute_\d+(?:, compute_\d+)*) of (worker_\d+) "
            r"from worker (\d+) \(pid \d+ [^)]*\) \(the worker running the most computes, 2\)")
        computes, node, giver = taken.group(1), taken.group(2), taken.group(3)
        victim = None
        if then:
            at = cluster.wait_for_text("scheduler", "err",
                                       rf"{computes} of {node} moved from .* at the end of epoch (\d+)'s training")
            victim = "joiner" if then == "kill-joiner" else f"worker{giver}"
            cluster.wait_for_text("scheduler", "out", rf"Epoch\[{int(at.group(1)) + 1}\] Batch \[[1-9]")
            os.kill(cluster.procs[victim].pid, signal.SIGKILL)
            adopted = cluster.wait_for_text("scheduler", "err", r"; (?:spare )?worker (?:\d+ )?\(pid \d+ [^)]*\) adopts ([^(]*) \(")
            print(f"killed {victim}; adopted: {adopted.group(1)}")
        codes = cluster.wait_all()
        bad = {n: c for n, c in codes.items() if c != 0 and n != victim}
        if bad:
            cluster.fail(f"exit statuses {bad}, expected 0")
        log = cluster.text("scheduler", "err")
        moved = re.search(rf"{computes} of {node} moved from worker {giver} \(pid \d+ [^)]*\) to spare worker (?:\d+ )?"
                          rf"\(pid \d+ [^)]*\) at the end of epoch (\d+)'s training", log)
        if not moved:
            cluster.fail(f"the scheduler's log does not say {computes} moved")
        if not re.search(rf"is ready to serve {computes} of {node} \([0-9.]+ s after it joined\)", log):
            cluster.fail(f"the scheduler's log does not say the joiner was ready to serve {computes}")
        if not re.search(rf"worker_{giver}: ceded {computes} of {node} at ", cluster.text(f"worker{giver}", "err")):
            cluster.fail(f"worker {giver} does not say it ceded {computes}")
        joiner = cluster.text("joiner", "err")
        if not re.search(rf"{node}/{computes}: took {computes} of {node} \(with their loaders\) as a spare", joiner):
            cluster.fail(f"the joiner does not say it took {computes}")
        got = final_weights(cluster.text("scheduler", "out"))
        expected = in_process_weights(troupe, config, rest, workdir)
        if got != expected:
            cluster.fail(f"the run a worker joined ended with {got}, one process with {expected}")
        for line in log.splitlines():
            if re.search(r"joined as a spare|takes compute|ready to serve|moved from|adopts|serves compute", line):
                print(line)
        print(f"ok: a third worker joined in epoch {epoch} and took {computes} from worker {giver} "
              f"(moved at the end of epoch {moved.group(1)}'s training); every node exit 0; {got} as in one process")
    finally:
        cluster.kill_all()


def main(workdir):
    troupe, config, servers, workers, epoch, outcome = sys.argv[1:7]
    rest = sys.argv[7:]
    if outcome == "rejoin":
        return rejoin(troupe, config, servers, workers, epoch, rest, workdir)
    if outcome == "grow":
        return grow(troupe, config, servers, workers, epoch, rest, workdir)
    if outcome in ("grow-kill-joiner", "grow-kill-giver"):
        return grow(troupe, config, servers, workers, epoch, rest, workdir, outcome[len("grow-"):])
    if outcome not in ("granted", "refused"):
        raise SystemExit(f"usage: drain_run.py TROUPE CONFIG SERVERS WORKERS EPOCH granted|refused|rejoin|grow[-kill-joiner|-kill-giver]: not {outcome}")
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
