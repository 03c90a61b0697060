#!/usr/bin/env python3
"""A server process killed mid-run is replaced by the backups of its shards, and the run ends
with the weights of a run that lost nothing (shard_backups = 1; docs/operations.md, "A lost server").

usage: backup_run.py TROUPE CONFIG SERVERS WORKERS KILL_EPOCH [--victim RANK] [--freeze] [troupe flags...]

Runs `troupe launch -n WORKERS -s SERVERS --shard-backups 1 --config CONFIG [flags]`, waits until the
scheduler logs a batch past the middle of epoch KILL_EPOCH (its `Epoch[E] Batch [B]` progress
lines past half the `x N batches` of the start line), then SIGKILLs server RANK (default 0; its
pid from the scheduler's `server R (pid P ...) joined` line). It must: exit 0; the scheduler
must name the lost server, the promotion (`promoting them`) and the server that serves its
shards now; the final weights line must equal `troupe train --config CONFIG [flags]` in one
process. Every wait has a deadline, moments come from log lines (no sleeps ordering events),
and the launch's process group is killed at the end whatever happens, so no process is left
behind.

With --freeze the server is SIGSTOPped instead, which it survives: once its backups serve its
shards (the scheduler's `serves the shards of` line, after the peer timeout: 3 s here) it is sent SIGCONT and runs again with the
term the scheduler fenced (node_fences.hpp). It must take no further part: the scheduler and
every other node say they fenced it, the frozen one ends naming it (`troupe node: fenced:`, exit
status 3, which launch takes as the loss it was), and the final weights are still one process's.

It prints the seconds from the kill to the promotion done (the scheduler's `serves the shards
of` line) and to the next progress line of the scheduler.
"""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_run import (MidEpochKill, kill_group, require_in_log, require_one_process_weights,  # noqa: E402
                         start_launch, watch_launch, work_folder)  # (shared)

BOUND_S = 300


def main(workdir):
    troupe, config, servers, workers, kill_epoch = sys.argv[1:6]
    rest = sys.argv[6:]
    victim_rank = 0
    if rest[:1] == ["--victim"]:
        victim_rank, rest = int(rest[1]), rest[2:]
    freeze = rest[:1] == ["--freeze"]
    if freeze:
        rest = rest[1:]
    command = [troupe, "launch", "-n", workers, "-s", servers, "--shard-backups", "1", "--config", config] + rest
    if freeze:  # lost after 3 s of silence rather than 5, the frozen server a node's flags only
        command += ["--peer-timeout", "3", "--heartbeat", "0.5"]
    proc = start_launch(command, workdir)
    try:
        kill = MidEpochKill("server", victim_rank, kill_epoch, signal.SIGSTOP if freeze else signal.SIGKILL)
        promoted_at = training_at = None

        def see(line):
            nonlocal promoted_at, training_at
            if kill.see(line):
                return
            if kill.progress and promoted_at and training_at is None:
                training_at = time.time()
            if kill.killed_at and promoted_at is None and "serves the shards of" in line:
                promoted_at = time.time()
                if freeze:  # it runs again with its old term, which every node refuses now
                    os.kill(kill.victim, signal.SIGCONT)
                    print(f"sent SIGCONT to server {victim_rank} (pid {kill.victim}) once its backups served its shards")

        out = watch_launch(proc, BOUND_S, see)
        killed_at, victim = kill.killed_at, kill.victim
        if killed_at is None:
            raise SystemExit(f"FAIL: the run ended before the kill\n{out[-3000:]}")
        require_in_log(out, [rf"lost server {victim_rank} \(pid {victim}", r"promoting them \(shard_backups = 1\)",
                             rf"serves the shards of server_{victim_rank}", r"promoted the backups of server_",
                             r"pushes for shard_\d+(, shard_\d+)* go to server_"])
        if freeze:
            require_in_log(out, [rf"scheduler: fenced server {victim_rank} \(pid {victim}.*\(term \d+\)",
                                 rf"\[worker 0\] worker_0: the scheduler fenced server_{victim_rank} \(term \d+\)",
                                 rf"\[server {victim_rank}\] troupe node: fenced: server_{victim_rank} \(term \d+\): fenced by ",
                                 rf"launch: server {victim_rank} \(pid {victim}\) exited with status 3",
                                 rf"launch: server {victim_rank} was fenced"])
        got = require_one_process_weights(troupe, config, rest, workdir, out, "run with shard backups")
        for line in out.splitlines():
            if re.search(r"lost server|promot|serves the shards|go to server|without a backup|killed by signal|fenced|SIGCONT", line):
                print(line)
        print(f"kill to promotion done: {promoted_at - killed_at:.3f} s")
        if training_at:
            print(f"kill to the next progress line: {training_at - killed_at:.3f} s")
        how = "frozen, then continued and fenced," if freeze else "killed"
        print(f"ok: server {victim_rank} {how} in epoch {kill_epoch}, its backups promoted; exit 0; {got} as in one process")
    finally:
        kill_group(proc.pid)


if __name__ == "__main__":
    with work_folder("troupe-backup-") as folder:
        main(folder)
