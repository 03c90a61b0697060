#!/usr/bin/env python3
"""cluster { balance = auto }: two worker processes whose compute stand-ins share one device each
(`--compute-stand-in-shared`) at different speeds; the scheduler moves ranks to the faster one
between epochs, and the run ends with the weights of the same run without balance
(docs/operations.md, "Balance").

usage: balance_run.py TROUPE CONFIG FAST_MS SLOW_MS [--batches N] [--hosts LINK] [troupe flags...]
       balance_run.py TROUPE slowed CONFIG SHARE [troupe flags...]

Every node is a `troupe node` started by hand (one server, two workers; the config gives the
ranks and epochs). Worker 0's stand-ins take FAST_MS per batch, worker 1's SLOW_MS, each process
serving its ranks in turn. It must:
  - exit 0 on every node, twice: with the config's balance = auto and with --balance off;
  - with balance: log the scheduler's weighing and one move of ranks from worker 1 to worker 0,
    its readiness and the move itself at the end of an epoch's training (an epoch trains after
    it), and worker 1's cede;
  - end both runs with the same weights (the stand-ins' gradients depend on the rank and the step,
    not on where a rank runs).
It prints each run's epoch times; with --batches N (an epoch's batches over every rank) also the
last epoch's rate against the two processes' summed solo rate (1000/FAST_MS + 1000/SLOW_MS
batches per second): figures for docs/benchmarks.md, not checked (no timing is asserted). With
--hosts LINK (root) every node runs on an emulated host of its own (scripts/emulated_hosts.py),
each host's link shaped to LINK (e.g. 10gbit).
`slowed`: real computes, worker 1 held to SHARE of one CPU (root, cgroup v1's cpu controller;
skipped, exit 77, without): a rank moves from worker 1 to worker 0, every node exits 0, and the
weights are those of `troupe train` in one process.
Every wait has a deadline; moments come from log lines; every process is killed at the end.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_run import Cluster, final_weights, in_process_weights, read_port, work_folder  # noqa: E402

BOUND_S = 300


class HostedCluster(Cluster):
    """The nodes each on an emulated host of its own (scripts/emulated_hosts.py), by node name."""

    def __init__(self, troupe, workdir, hosts):
        super().__init__(troupe, workdir)
        self.hosts = hosts

    def launcher(self, name):
        return self.hosts.command(name, [])


def run(troupe, config, fast, slow, flags, workdir, hosts=None):
    os.makedirs(workdir)
    cluster = HostedCluster(troupe, workdir, hosts) if hosts else Cluster(troupe, workdir)
    address = (lambda name: hosts.addr[name]) if hosts else (lambda name: "127.0.0.1")
    try:
        common = ["--config", config] + flags
        port_file = os.path.join(workdir, "scheduler.port")
        at = address("scheduler")
        cluster.start("scheduler", ["--role", "scheduler", "--scheduler", f"{at}:0", "--port-file", port_file]
                      + common)
        port = read_port(cluster, port_file)
        cluster.start("server0", ["--role", "server", "--scheduler", f"{at}:{port}", "--listen", address("server0")]
                      + common)
        for w, ms in enumerate([fast, slow]):
            cluster.start(f"worker{w}", ["--role", "worker", "--rank", str(w), "--scheduler", f"{at}:{port}",
                                         "--listen", address(f"worker{w}"),
                                         "--compute-stand-in-ms", ms, "--compute-stand-in-shared"] + common)
        codes = cluster.wait_all(BOUND_S)
        bad = {n: c for n, c in codes.items() if c != 0}
        if bad:
            cluster.fail(f"exit statuses {bad}, expected 0")
        return cluster.text("scheduler", "out"), cluster.text("scheduler", "err"), cluster.text("worker1", "err")
    finally:
        cluster.kill_all()


def epoch_seconds(out):
    return [float(t) for t in re.findall(r"Epoch\[\d+\] Time cost=([0-9.]+)", out)]


CPU_CGROUP = "/sys/fs/cgroup/cpu"  # cgroup v1's cpu controller (cpu.cfs_quota_us)


def slowed(troupe, config, share, flags, workdir):
    """Real computes; worker 1 held to `share` of one CPU (a cgroup's CFS quota) from its start."""
    if os.geteuid() != 0 or not os.path.exists(os.path.join(CPU_CGROUP, "cpu.cfs_quota_us")):
        print(f"skipped: holding a process to a share of a CPU needs root and cgroup v1's cpu controller at {CPU_CGROUP}")
        raise SystemExit(77)
    group = os.path.join(CPU_CGROUP, f"troupe-balance-{os.getpid()}")
    os.makedirs(group)
    cluster = Cluster(troupe, workdir)
    try:
        period = int(open(os.path.join(group, "cpu.cfs_period_us")).read())
        with open(os.path.join(group, "cpu.cfs_quota_us"), "w") as f:
            f.write(str(max(1000, int(period * float(share)))))
        common = ["--config", config] + flags
        port_file = os.path.join(workdir, "scheduler.port")
        cluster.start("scheduler", ["--role", "scheduler", "--scheduler", "127.0.0.1:0", "--port-file", port_file]
                      + common)
        port = read_port(cluster, port_file)
        cluster.start("server0", ["--role", "server", "--scheduler", f"127.0.0.1:{port}"] + common)
        cluster.start("worker0", ["--role", "worker", "--rank", "0", "--scheduler", f"127.0.0.1:{port}"] + common)
        slow = cluster.start("worker1", ["--role", "worker", "--rank", "1", "--scheduler", f"127.0.0.1:{port}"]
                             + common)
        with open(os.path.join(group, "cgroup.procs"), "w") as f:
            f.write(str(slow.pid))
        codes = cluster.wait_all(BOUND_S)
        bad = {n: c for n, c in codes.items() if c != 0}
        if bad:
            cluster.fail(f"exit statuses {bad}, expected 0")
        out, log = cluster.text("scheduler", "out"), cluster.text("scheduler", "err")
        weighed = re.search(r"scheduler: balance after epoch (\d+)'s training, which took .*; worker 0 \(pid \d+ "
                            r"[^)]*\) takes (compute_\d+(?:, compute_\d+)*) of (worker_1) from worker 1 ", log)
        if not weighed:
            cluster.fail("the scheduler's log names no balance move from the slowed worker 1 to worker 0")
        computes, node = weighed.group(2), weighed.group(3)
        moved = re.search(rf"{computes} of {node} moved from worker 1 \(pid \d+ [^)]*\) to worker 0 \(pid \d+ "
                          rf"[^)]*\) at the end of epoch (\d+)'s training", log)
        if not moved:
            cluster.fail(f"the scheduler does not say {computes} moved")
        if not re.search(rf"worker_1: ceded {computes} of {node} at ", cluster.text("worker1", "err")):
            cluster.fail(f"worker 1 does not say it ceded {computes}")
        got = final_weights(out)
        expected = in_process_weights(troupe, config, flags, workdir)
        if got != expected:
            cluster.fail(f"the balanced run ended with {got}, one process with {expected}")
        for line in log.splitlines():
            if re.search(r"balance after|ready to serve|moved from", line):
                print(line)
        print(f"ok: worker 1 held to {share} of a CPU; {computes} moved to worker 0 at the end of epoch "
              f"{moved.group(1)}; epoch times {epoch_seconds(out)} s; every node exit 0; {got} as in one process")
    finally:
        cluster.kill_all()
        for _ in range(50):  # its processes have gone: the group empties
            try:
                os.rmdir(group)
                break
            except OSError:
                time.sleep(0.1)


def main(workdir):
    if sys.argv[2:3] == ["slowed"]:
        troupe, _, config, share = sys.argv[1:5]
        return slowed(troupe, config, share, sys.argv[5:], workdir)
    troupe, config, fast, slow = sys.argv[1:5]
    flags = sys.argv[5:]
    link = None  # --hosts LINK (the script's own; root): every node on an emulated host, LINK each
    if "--hosts" in flags:
        at = flags.index("--hosts")
        link = flags[at + 1]
        flags = flags[:at] + flags[at + 2:]
    if link:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
        import emulated_hosts
        emulated_hosts.need_root()
        with emulated_hosts.EmulatedHosts(["scheduler", "server0", "worker0", "worker1"],
                                          link=emulated_hosts.parse_link(link)) as hosts:
            return measure(troupe, config, fast, slow, flags, workdir, hosts)
    return measure(troupe, config, fast, slow, flags, workdir)


def measure(troupe, config, fast, slow, flags, workdir, hosts=None):
    batches = 0  # --batches N (the script's own): an epoch's batches over every rank, for the rates printed
    if "--batches" in flags:
        at = flags.index("--batches")
        batches = int(flags[at + 1])
        flags = flags[:at] + flags[at + 2:]
    out, log, giver = run(troupe, config, fast, slow, flags, os.path.join(workdir, "balanced"), hosts)
    weighed = re.search(r"scheduler: balance after epoch (\d+)'s training, which took .*; worker 0 \(pid \d+ [^)]*\) "
                        r"takes (compute_\d+(?:, compute_\d+)*) of (worker_\d+) from worker 1 \(pid \d+ [^)]*\) "
                        r"\(an epoch's [0-9.]+ s of training becomes [0-9.]+ s, as estimated\)", log)
    if not weighed:
        raise SystemExit(f"FAIL: the scheduler's log names no balance move from worker 1 to worker 0\n{log[-3000:]}")
    computes, node = weighed.group(2), weighed.group(3)
    moved = re.search(rf"{computes} of {node} moved from worker 1 \(pid \d+ [^)]*\) to worker 0 \(pid \d+ [^)]*\) "
                      rf"at the end of epoch (\d+)'s training", log)
    if not moved:
        raise SystemExit(f"FAIL: the scheduler does not say {computes} moved\n{log[-3000:]}")
    if not re.search(rf"worker_1: ceded {computes} of {node} at ", giver):
        raise SystemExit(f"FAIL: worker 1 does not say it ceded {computes}\n{giver[-2000:]}")
    times = epoch_seconds(out)
    if len(times) <= int(moved.group(1)) + 1:
        raise SystemExit(f"FAIL: no epoch trained after the move (epoch times {times})")
    balanced_got = final_weights(out)
    plain_out, _, _ = run(troupe, config, fast, slow, flags + ["--balance", "off"], os.path.join(workdir, "plain"),
                          hosts)
    plain_got = final_weights(plain_out)
    if balanced_got != plain_got:
        raise SystemExit(f"FAIL: with balance the run ended with {balanced_got}, without it {plain_got}")
    plain = epoch_seconds(plain_out)
    for line in log.splitlines():
        if re.search(r"balance after|ready to serve|moved from", line):
            print(line)
    solo = 1000 / float(fast) + 1000 / float(slow)  # batches per second of each process alone, summed
    print(f"ok: {computes} of {node} moved from worker 1 to worker 0 at the end of epoch {moved.group(1)}; "
          f"epoch times {times} s with balance, {plain} s without; {balanced_got} both ways")
    if batches:
        print(f"last epoch: {batches / times[-1]:.2f} batches/s with balance ({batches / times[-1] / solo:.3f} of the "
              f"summed solo {solo:.2f}), {batches / plain[-1]:.2f} without ({batches / plain[-1] / solo:.3f})")


if __name__ == "__main__":
    with work_folder("troupe-balance-") as folder:
        main(folder)
