#!/usr/bin/env python3
"""Stragglers named: a BSP cluster by hand (1 server, 2 workers) in which
worker 1's computes take a fixed time per batch (`--compute-stand-in-ms MS`, as a slower device
would) while worker 0 computes the small model at once. Every epoch's `Waited for:` line must
name worker_1 first, and the metrics file's `waited_for` must count worker_1 last in more steps
than worker_0. Only who is named is checked, never a time. Every process must exit 0; the
processes are killed at the end whatever happens.

usage: straggler_run.py TROUPE CONFIG MS
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_run import Cluster, read_port, work_folder  # noqa: E402  (shared with the other cluster tests)


def main(workdir):
    troupe, config, ms = sys.argv[1:4]
    cluster = Cluster(troupe, workdir)
    metrics = os.path.join(workdir, "m.jsonl")
    common = ["--config", config, "--server-nodes", "1", "--worker-nodes", "2"]
    try:
        port_file = os.path.join(workdir, "scheduler.port")
        cluster.start("scheduler", ["--role", "scheduler", "--scheduler", "127.0.0.1:0", "--port-file", port_file,
                                    "--metrics", metrics] + common)
        at = ["--scheduler", f"127.0.0.1:{read_port(cluster, port_file)}"]
        cluster.start("server0", ["--role", "server", "--rank", "0"] + at + common)
        cluster.start("worker0", ["--role", "worker", "--rank", "0"] + at + common)
        cluster.start("worker1", ["--role", "worker", "--rank", "1", "--compute-stand-in-ms", ms] + at + common)
        codes = cluster.wait_all()
        if any(codes.values()):
            cluster.fail(f"exit statuses {codes}, expected 0")
        out = cluster.text("scheduler", "out")
        lines = re.findall(r"Epoch\[(\d+)\] Waited for: (\S+) ", out)
        epochs = re.findall(r"Epoch\[(\d+)\] Train-accuracy", out)
        if not epochs or sorted({e for e, _ in lines}) != sorted(set(epochs)):
            cluster.fail(f"a `Waited for:` line per epoch expected, epochs {epochs}, lines {lines}")
        if any(first != "worker_1" for _, first in lines):
            cluster.fail(f"the slowed worker_1 is not named first in every epoch: {lines}")
        rows = [json.loads(line) for line in open(metrics).read().splitlines()]
        waits = [r["waited_for"] for r in rows if "waited_for" in r]
        if len(waits) != len(epochs):
            cluster.fail(f"{len(waits)} metrics lines with waited_for, {len(epochs)} epochs")
        for w in waits:
            if w.get("worker_1", {}).get("steps", 0) <= w.get("worker_0", {}).get("steps", 0):
                cluster.fail(f"worker_1 was not last in more steps than worker_0: {w}")
        for line in out.splitlines():
            if "Waited for:" in line:
                print(line)
        print(f"ok: every epoch names worker_1 (its computes {ms} ms per batch) as the one the barriers waited for")
    finally:
        left = cluster.kill_all()
        if left:
            raise SystemExit(f"FAIL: processes survive SIGKILL: {left}")


if __name__ == "__main__":
    with work_folder("troupe-straggler-") as folder:
        main(folder)
