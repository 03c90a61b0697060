#!/usr/bin/env python3
"""Runs a Troupe cluster job across Linux network namespaces, one per emulated host.

usage: cluster_netns.py TROUPE SCENARIO CONFIG

Setup (scripts/emulated_hosts.py, unshaped links): a bridge teb<N> in the root namespace (N = pid % 10000,
or the next free number), and four namespaces (scheduler, server, worker0, worker1), each joined to the
bridge by a veth pair and holding one address of a private /24 (10.a.b.1-4) that overlaps no address or
route of this machine. So the
nodes have different addresses and reach each other only over the bridge. Everything is torn down at
the end whatever happens (processes killed first, then namespaces, veths, bridge).

Scenarios (CONFIG: 1 server and 2 worker processes, e.g. tests/apps/configs/cluster_bsp.troupe):
  weights  the job with --num-epochs 2: every process exits 0, the scheduler's join lines show each
           node at its own namespace's address, and its final-weights line equals the one
           `troupe train --num-epochs 2` prints in one process
  cut      a long run (--num-epochs 1000, --heartbeat 0.2, --peer-timeout 2); once training is under
           way, worker1's bridge-side veth is set down: the scheduler exits non-zero within 15 s
           naming the lost worker (its pid), the server and the other worker exit non-zero within
           15 s, and the cut-off worker exits non-zero by itself within 15 s once its channels time out
  loopback a server started without --listen (so on 127.0.0.1): the scheduler refuses to hand
           that address to workers on other hosts, saying so with --listen and --advertise, and
           every process exits non-zero within the bound (not a worker's `cannot connect`)
  wildcard a server with --listen 0.0.0.0 and no --advertise: the scheduler hands the workers the
           address the server's connection came from; the job trains to the in-process weights

Skipped (exit 77, one line why) when not root, without `ip`, or when a namespace cannot be created.
Every process runs in its own session and is killed at the end; every wait has a deadline.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import cluster_run  # noqa: E402  (its process handling, shared)
import emulated_hosts  # noqa: E402  (the namespaces, bridge and veths, shared with troupe bench scaling)
from cluster_run import alive, final_weights, kill_group  # noqa: E402

BOUND_S = 120   # a whole run must finish within this
CUT_BOUND_S = 15
HOSTS = ["scheduler", "server0", "worker0", "worker1"]  # host i has address .i+1
SKIP = 77


def skip(why):
    print(f"skipped: {why}")
    raise SystemExit(SKIP)


def ip(*args, timeout=20):
    """Runs `ip ARGS`; returns (returncode, stdout + stderr)."""
    try:
        run = subprocess.run(["ip"] + list(args), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, f"ip {' '.join(args)}: still runs after {timeout} s"
    return run.returncode, (run.stdout + run.stderr).strip()


def ip_ok(*args):
    code, out = ip(*args)
    if code != 0:
        raise SystemExit(f"FAIL: ip {' '.join(args)}: {out}")
    return out


class Net(emulated_hosts.EmulatedHosts):
    """The bridge, the namespaces and the veth pairs of one run (scripts/emulated_hosts.py), unshaped."""

    def __init__(self, hosts=None):
        super().__init__(list(hosts or HOSTS))  # scripts/chaos.py names one host per node of its job

    def create(self):
        try:
            super().create()
        except RuntimeError as e:
            if not self.namespaces_made():
                skip(f"cannot create a bridge or a network namespace ({e})")
            raise SystemExit(f"FAIL: {e}")

    def namespaces_made(self):
        return bool(self.ns)


class Cluster(cluster_run.Cluster):
    """cluster_run's processes, each in its own namespace."""

    def __init__(self, troupe, workdir, net):
        super().__init__(troupe, workdir)
        self.net = net

    def launcher(self, name):
        # `ip netns exec` enters the namespace and execs the command: the pid is troupe's own
        return ["ip", "netns", "exec", self.net.ns[name]]

    def wait_exit(self, name, deadline, what):
        try:
            self.procs[name].wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            self.fail(f"{name} still runs {what}")
        return self.procs[name].returncode


def start_job(cluster, config, flags, server_listen=None):
    net = cluster.net
    common = ["--config", config, "--server-nodes", "1", "--worker-nodes", "2"] + flags
    port_file = os.path.join(cluster.workdir, "scheduler.port")
    cluster.start("scheduler", ["--role", "scheduler", "--scheduler", f"{net.addr['scheduler']}:0",
                                "--port-file", port_file] + common)
    deadline = time.time() + 30
    while not os.path.exists(port_file) or not open(port_file).read().strip():
        if cluster.procs["scheduler"].poll() is not None:
            cluster.fail("the scheduler ended before it listened")
        if time.time() > deadline:
            cluster.fail("no port file from the scheduler within 30 s")
        time.sleep(0.02)
    at = ["--scheduler", f"{net.addr['scheduler']}:{int(open(port_file).read())}"]
    listen = ["--listen", net.addr["server0"]] if server_listen is None else server_listen
    cluster.start("server0", ["--role", "server"] + listen + at + common)
    for w in ("worker0", "worker1"):
        cluster.start(w, ["--role", "worker", "--advertise", net.addr[w]] + at + common)


def check_hosts(cluster):
    """The scheduler saw each node join from its own namespace's address."""
    log = cluster.text("scheduler", "err")
    seen = []
    for name in ("server0", "worker0", "worker1"):
        role, pid, addr = re.match(r"[a-z]+", name).group(0), cluster.procs[name].pid, cluster.net.addr[name]
        found = re.search(rf"{role} \d+ \(pid {pid} from (\S+)\) joined", log)
        if not found:
            cluster.fail(f"the scheduler logged no join of {name} (pid {pid})")
        if found.group(1) != addr:
            cluster.fail(f"{name} (pid {pid}) joined from {found.group(1)}, expected {addr}")
        seen.append(f"{name}@{addr}")
    listening = re.search(r"listening on (\S+):\d+", log)
    if not listening or listening.group(1) != cluster.net.addr["scheduler"]:
        cluster.fail(f"the scheduler listens on {listening and listening.group(1)}, "
                     f"expected {cluster.net.addr['scheduler']}")
    return seen


def run_loopback(cluster, config):
    start_job(cluster, config, ["--num-epochs", "2"], server_listen=[])
    deadline = time.time() + BOUND_S
    codes = {name: cluster.wait_exit(name, deadline, f"after {BOUND_S} s") for name in list(cluster.procs)}
    if not all(codes.values()):
        cluster.fail(f"exit statuses {codes}: every process should have failed")
    pattern = (r"server 0 \(pid \d+ from [\d.]+\) said it listens on 127\.0\.0\.1, which worker \d+ \(pid \d+ from "
               r"[\d.]+\), on another host, cannot reach: start the server with --listen ADDRESS .* or --advertise ADDRESS")
    for name in ("scheduler", "worker0", "worker1", "server0"):
        if not re.search(pattern, cluster.text(name, "err")):
            cluster.fail(f"{name} does not say why the server's address is refused")
    if any("cannot connect" in cluster.text(name, "err") for name in cluster.procs):
        cluster.fail("a worker tried the loopback address")
    print(f"ok: loopback: the scheduler refused server0's 127.0.0.1 naming --listen/--advertise; exits {codes}")


def run_weights(cluster, troupe, config, server_listen=None):
    flags = ["--num-epochs", "2"]
    start_job(cluster, config, flags, server_listen)
    deadline = time.time() + BOUND_S
    codes = {name: cluster.wait_exit(name, deadline, f"after {BOUND_S} s") for name in list(cluster.procs)}
    if any(codes.values()):
        cluster.fail(f"exit statuses {codes}")
    seen = check_hosts(cluster)
    reference = subprocess.run([troupe, "train", "--config", config] + flags, capture_output=True, text=True,
                               cwd=cluster.workdir, timeout=BOUND_S)
    if reference.returncode != 0:
        cluster.fail(f"troupe train exited {reference.returncode}\n{reference.stderr[-2000:]}")
    want, got = final_weights(reference.stdout), final_weights(cluster.text("scheduler", "out"))
    if not want or want.startswith("Final weights: 0 tensors"):
        cluster.fail(f"troupe train printed no weights\n{reference.stdout[-2000:]}")
    if got != want:
        cluster.fail(f"across namespaces: {got}\nin one process: {want}")
    if server_listen is not None:  # 0.0.0.0: the workers were given the address it came from
        said = rf"listens on 0\.0\.0\.0; workers will reach it at {re.escape(cluster.net.addr['server0'])}, the address it came from"
        if not re.search(said, cluster.text("scheduler", "err")):
            cluster.fail("the scheduler does not say where the workers reach the server listening on 0.0.0.0")
    print(f"ok: weights: scheduler@{cluster.net.addr['scheduler']}, {', '.join(seen)}: 4 processes exited 0; "
          f"{got} as in one process")


def run_cut(cluster, config):
    start_job(cluster, config, ["--num-epochs", "1000", "--heartbeat", "0.2", "--peer-timeout", "2"])
    deadline, ready_at = time.time() + BOUND_S, None
    while True:
        if re.search(r"Epoch\[0\] Batch", cluster.text("scheduler", "out")):
            break
        if ready_at is None and "every node is ready" in cluster.text("scheduler", "err"):
            ready_at = time.time()
        if ready_at is not None and time.time() > ready_at + 1:
            break
        ended = [n for n, p in cluster.procs.items() if p.poll() is not None]
        if ended:
            cluster.fail(f"{ended} ended before the cut")
        if time.time() > deadline:
            cluster.fail(f"training not under way after {BOUND_S} s")
        time.sleep(0.05)
    check_hosts(cluster)
    victim, veth = cluster.procs["worker1"], cluster.net.outer["worker1"]
    cut_at = time.time()
    ip_ok("link", "set", veth, "down")
    bound = cut_at + CUT_BOUND_S
    took = {}
    for name in ("scheduler", "server0", "worker0"):
        code = cluster.wait_exit(name, bound, f"{CUT_BOUND_S} s after the cut")
        took[name] = time.time() - cut_at
        if code == 0:
            cluster.fail(f"{name} exited 0 after the cut")
    addr = cluster.net.addr["worker1"]
    lost = re.search(rf"scheduler: lost worker \d+ \(pid {victim.pid} from {re.escape(addr)}\) at [^\n]*",
                     cluster.text("scheduler", "err"))
    if not lost:
        cluster.fail(f"the scheduler's log does not name the lost worker (pid {victim.pid} on {addr})")
    # the cut-off worker hears nothing more: it must give up by itself once its channels time out
    code = cluster.wait_exit("worker1", bound, f"{CUT_BOUND_S} s after its link was cut")
    took["worker1"] = time.time() - cut_at
    if code == 0:
        cluster.fail("the cut-off worker exited 0")
    print(f"ok: cut: {veth} (worker1 at {addr}) down; {lost.group(0)}; exits "
          + ", ".join(f"{n} {cluster.procs[n].returncode} after {t:.1f} s" for n, t in took.items()))


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in ("weights", "cut", "loopback", "wildcard"):
        raise SystemExit(__doc__)
    troupe, scenario, config = os.path.abspath(sys.argv[1]), sys.argv[2], os.path.abspath(sys.argv[3])
    if os.geteuid() != 0:
        skip(f"network namespaces need root (euid {os.geteuid()})")
    if not shutil.which("ip"):
        skip("no `ip` command (iproute2)")
    # a SIGTERM (a test driver's) or a hangup tears down as Ctrl-C does
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
    workdir = tempfile.mkdtemp(prefix=f"troupe-netns-{scenario}-")
    net, cluster, outcome = Net(), None, "fail"
    try:
        net.create()
        cluster = Cluster(troupe, workdir, net)
        if scenario == "weights":
            run_weights(cluster, troupe, config)
        elif scenario == "wildcard":
            run_weights(cluster, troupe, config, server_listen=["--listen", "0.0.0.0"])
        elif scenario == "loopback":
            run_loopback(cluster, config)
        else:
            run_cut(cluster, config)
        outcome = "pass"
    except SystemExit as e:
        if e.code == SKIP:
            outcome = "skip"
        raise
    finally:
        survivors = cluster.kill_all() if cluster else []
        left = net.destroy()
        if survivors or left:
            print(f"FAIL: left behind: {', '.join(survivors + left)}")
            outcome = "fail"
        if outcome == "fail":
            print(f"(logs in {workdir})")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if outcome != "pass":
        raise SystemExit(1)


if __name__ == "__main__":
    main()
