#!/usr/bin/env python3
"""A cluster's timeline is on one clock although its hosts' clocks differ.

usage: timeline_clock.py TROUPE CONFIG CHECK_TIMELINE [troupe flags...]

Starts a scheduler, one server and two workers by hand (`troupe node --timeline PART`), the
second worker under libfaketime with its clocks 60 s ahead (`faketime -f +60s`: a host whose
clock is off; skipped, 77, without faketime). Every node must exit 0. The late worker's part
must record an offset to the scheduler's clock of -60 s, to within the uncertainty it states
(the join's round trip) and 20 ms. `troupe timeline` must merge the four parts, say that the
three members' are shifted onto the scheduler's clock, and the result must pass
check_timeline.py. In the merged file the two workers' forward spans of each step, which a
synchronous topology starts together (each waits for the other's pushes), must start within
1 s of each other (median), where the unshifted parts are 60 s apart. Every process is killed
at the end whatever happens; every wait has a deadline.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_run import Cluster, read_port, work_folder  # noqa: E402  (shared)

SKEW_US = 60_000_000
BOUND_S = 240


class SkewedCluster(Cluster):
    def launcher(self, name):
        return ["faketime", "-f", "+60s"] if name == "worker1" else []


def forward_starts(trace, process):
    """{step: ts} of the forward spans in the named process of a trace."""
    pids = {e["pid"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"] == process}
    assert len(pids) == 1, f"{len(pids)} processes named {process!r}"
    return {e["args"]["step"]: e["ts"] for e in trace["traceEvents"]
            if e["pid"] in pids and e["ph"] == "X" and e["name"] == "forward"}


def median_gap(a, b):
    steps = sorted(set(a) & set(b))
    assert len(steps) >= 10, f"only {len(steps)} steps in both workers' timelines"
    return statistics.median(abs(a[s] - b[s]) for s in steps), len(steps)


def load(path):
    with open(path) as f:
        return json.load(f)


def main(workdir):
    troupe, config, checker = (os.path.abspath(p) for p in sys.argv[1:4])
    flags = sys.argv[4:]
    if shutil.which("faketime") is None:
        print("skipped: no faketime (Debian package faketime)")
        raise SystemExit(77)
    cluster = SkewedCluster(troupe, workdir)
    try:
        common = ["--config", config, "--server-nodes", "1", "--worker-nodes", "2"] + flags
        parts = {name: os.path.join(workdir, f"{name}.json")
                 for name in ("scheduler", "server0", "worker0", "worker1")}
        port_file = os.path.join(workdir, "scheduler.port")
        cluster.start("scheduler", ["--role", "scheduler", "--scheduler", "127.0.0.1:0",
                                    "--port-file", port_file, "--timeline", parts["scheduler"]] + common)
        port = read_port(cluster, port_file)
        # Each asks for its rank: join order would otherwise decide which of the two workers
        # is worker_1, and the skewed one must be.
        for name, role, rank in (("server0", "server", 0), ("worker0", "worker", 0),
                                 ("worker1", "worker", 1)):
            cluster.start(name, ["--role", role, "--rank", str(rank), "--scheduler",
                                 f"127.0.0.1:{port}", "--timeline", parts[name]] + common)
        codes = cluster.wait_all(BOUND_S)
        if any(codes.values()):
            cluster.fail(f"exit statuses {codes}")
        late = load(parts["worker1"]).get("otherData", {})
        offset, uncertainty = late.get("clock_offset_us"), late.get("clock_uncertainty_us")
        if offset is None or uncertainty is None:
            cluster.fail(f"worker1's part records no clock offset: {late}")
        if abs(offset + SKEW_US) > uncertainty + 20_000:
            cluster.fail(f"worker1 measured {offset} us (within {uncertainty} us), expected {-SKEW_US}")
        merged = os.path.join(workdir, "merged.json")
        run = subprocess.run([troupe, "timeline", merged] + list(parts.values()),
                             capture_output=True, text=True, timeout=60)
        if run.returncode != 0 or "3 shifted onto the scheduler's clock, 1 on their own" not in run.stdout:
            cluster.fail(f"troupe timeline exited {run.returncode}:\n{run.stdout}{run.stderr}")
        check = subprocess.run([sys.executable, checker, merged, "4"], capture_output=True, text=True,
                               timeout=60)
        if check.returncode != 0:
            cluster.fail(f"the merged timeline fails the checker:\n{check.stdout}{check.stderr}")
        raw_gap, _ = median_gap(forward_starts(load(parts["worker0"]), "worker_0"),
                                forward_starts(load(parts["worker1"]), "worker_1"))
        trace = load(merged)
        gap, steps = median_gap(forward_starts(trace, "worker_0"), forward_starts(trace, "worker_1"))
        if raw_gap < SKEW_US / 2:
            cluster.fail(f"the skewed worker's own part is only {raw_gap} us off: faketime did not take")
        if gap > 1_000_000:
            cluster.fail(f"merged, the workers' forwards of a step are {gap} us apart (median of {steps})")
        print(f"ok: worker1 measured {offset} us (within {uncertainty} us); the workers' forwards of "
              f"{steps} steps start a median {gap} us apart merged, {raw_gap} us in their own parts")
    finally:
        cluster.kill_all()


if __name__ == "__main__":
    with work_folder("troupe-timeline-clock-") as folder:
        main(folder)
