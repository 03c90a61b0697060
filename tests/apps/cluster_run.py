#!/usr/bin/env python3
"""Runs Troupe cluster jobs as real processes on 127.0.0.1 and checks what they must show.

usage: cluster_run.py TROUPE SCENARIO CONFIG SERVERS WORKERS [extra troupe flags...]

Scenarios:
  same-weights   scheduler, servers and workers started one by one by hand train the config;
                 every process exits 0 and the scheduler's final-weights line equals the one
                 `troupe train` prints for the same config and flags in one process
                 (same-weights-paced: over TCP, told a link rate: paced channels, pushes in a fixed order (by rank
                 with one worker node);
                 same-weights-paced-config: the rate stated in the config's cluster block instead;
                 same-weights-paced-overridden: stated there, and --link-mbit 0 on every node: not paced)
  learns         as above for a topology whose result depends on timing (async): every
                 process exits 0 and the last validation accuracy is above 0.5
  launch         the same-weights check with `troupe launch -n WORKERS -s SERVERS` starting the
                 processes; its output carries a prefix per node; then SIGINT to a second launch
                 mid-run: it exits 130, leaves no process behind, and every node says it was
                 interrupted (launch passes the signal on; none is killed by SIGTERM)
  launch-init    fine-tuning launched: a one-process run's checkpoint seeds the servers
                 (--init-from, --reset-layers fc3), and the run ends as the same in one process
  dmlc           the same-weights check with every node's place from ps-lite's variables
                 (DMLC_ROLE, DMLC_PS_ROOT_URI/PORT, DMLC_NUM_WORKER/SERVER), no --role
  slurm          the same from SLURM_PROCID / SLURM_NTASKS / SLURM_JOB_NODELIST
  mpi            the same under Open MPI's mpirun: one command line for every rank (rank 0 the
                 scheduler, then the servers, then the workers); skipped (77) without mpirun
  kill-worker, kill-server, kill-scheduler, stop-worker
                 a long run; once training is under way, SIGKILL (or SIGSTOP) one node: every
                 other process must exit non-zero within the bound, the scheduler (when alive)
                 naming the lost node; a stopped worker, continued afterwards, exits too
  traffic        the same-weights run with --metrics: each epoch's traffic per node matches the
                 arithmetic. A worker pushes each key once per step and gets the weights back:
                 model bytes x steps each way, plus at most the frame overhead docs/protocol.md
                 bounds (136 bytes per push or weights frame + 32 per key), plus the whole model
                 once when a worker pulls it (its first step). The server receives
                 exactly what the workers sent and sends exactly what they received. With
                 --top-k K among the flags, the workers' top-k counts cross the wire too: every
                 epoch's line has top_k K and a training top-k accuracy at least the accuracy,
                 equal to the scheduler's `Train-top_k_accuracy_K:` line, and the scheduler
                 logs a validation top-k at least the validation accuracy
  continue-after-kill
                 an async run with --on-worker-loss continue: SIGKILL of a worker mid-run; the
                 scheduler logs that it goes on without it, and every other process finishes
                 the run and exits 0, with validation accuracy still logged at the end
  continue-after-kill-ssp
                 the same for an SSP run: besides, the server says its shards no longer wait
                 for the killed worker's compute (else the others would be held for good once
                 they are `staleness` steps ahead of it)
  interrupt-scheduler
                 a long run with --metrics; Ctrl-C (SIGINT) to the scheduler once an epoch is
                 recorded: it says where the run was and exits 130, its metrics file holds the
                 config record and whole epoch records, and every other node exits non-zero
  ranks          workers started by hand with --rank in reverse order get those ranks; one asking
                 for a rank already taken is refused naming the holder; the job ends with the
                 same weights
  start-errors   each a clear line and a non-zero exit within its timeout: a node with no
                 scheduler (join timeout 2 s); a scheduler nobody joins (2 s); a scheduler on a
                 port in use; a worker whose own config is another job than the scheduler's
                 (the refusal names the key that differs, hashes as `troupe check` prints them);
                 a server advertising an address it does not listen on (the worker's error
                 names --listen and --advertise)
  wrong-secret   a node holding another secret is refused once, says so and exits 1 (no retry:
                 a refusal is final), and the job, unharmed, ends with the same weights; a raw
                 TCP client sending random bytes to the scheduler and to a server is refused
                 too; the scheduler logs each refused peer once

  threads        CONFIG without a thread count: the scheduler alone is given --threads 1, the
                 server and workers none; each worker says its computes run on 1 thread, the
                 scheduler's summary names each worker's count, and the weights equal
                 `troupe train --threads 1`; a worker given --threads 2 beside that scheduler
                 is refused naming both counts. Then `troupe launch` with no count: each worker
                 takes its share of this host (hardware threads / workers, at least 1), says
                 so, and the weights equal `troupe train --threads SHARE`
  launch-network `troupe launch -n WORKERS -s SERVERS --network mlp` without a config: one
                 compute per worker process, the weights of `troupe train --workers WORKERS`
  interrupt-worker
                 Ctrl-C (SIGINT) to a worker started by hand once training is under way: it
                 says where it was and exits 130; every other node exits non-zero
  one-write      usage errors of `troupe node` are written one line per write (processes under
                 mpirun share a stream): stderr is a datagram socket, so each write arrives whole

Every process runs in its own process group and is killed at the end whatever happens, so no
test leaves a process behind; every wait has a deadline.
"""
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "scripts"))
import child_process  # noqa: E402  (the one launcher of child processes, shared with the scripts)
from child_process import Children, alive, descendants, kill_group  # noqa: E402,F401

SECRET = "troupe-test-secret-0123456789abcdef"
BOUND_S = 120  # a whole run, or a failure to spread, must finish within this


@contextlib.contextmanager
def work_folder(prefix):
    """A new folder for a scenario's files (the nodes' logs, port files): removed once the scenario has passed or
    was skipped (exit 77) and its processes are gone, kept and named when it fails."""
    workdir = tempfile.mkdtemp(prefix=prefix)
    try:
        yield workdir
    except BaseException as e:
        if isinstance(e, SystemExit) and e.code in (None, 0, 77):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"(logs in {workdir})")
        raise
    shutil.rmtree(workdir, ignore_errors=True)


class Cluster(Children):
    """The nodes of one scenario, by name (child_process.Children: a session each, output in
    workdir/<name>.out and .err, every group killed at the end)."""

    def __init__(self, troupe, workdir):
        super().__init__(workdir)
        self.troupe = troupe

    def launcher(self, name):
        """What runs node `name`'s command (cluster_netns.py: `ip netns exec NS`)."""
        return []

    def start(self, name, args, env_extra=None, secret=SECRET):
        env = dict(os.environ)
        env["TROUPE_SECRET"] = secret
        env.update(env_extra or {})
        return super().start(name, self.launcher(name) + [self.troupe, "node"] + args, env=env)

    def wait_for_text(self, name, stream, pattern, timeout=BOUND_S):
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = re.search(pattern, self.text(name, stream))
            if found:
                return found
            if self.procs[name].poll() is not None:
                break
            time.sleep(0.05)
        self.fail(f"{name} did not print /{pattern}/ on {stream}")

    def wait_all(self, timeout=BOUND_S):
        codes = super().wait_all(timeout)
        for name, code in codes.items():
            if code is None:
                self.fail(f"{name} still runs after {timeout} s")
        return codes

    def dump(self):
        for name in self.procs:
            for stream in ("out", "err"):
                text = self.text(name, stream)
                if text:
                    print(f"----- {name}.{stream}\n{text[-3000:]}")

    def fail(self, why):
        self.dump()
        raise SystemExit(f"FAIL: {why}")


def read_port(cluster, path):
    deadline = time.time() + 30
    while time.time() < deadline:
        if os.path.exists(path):
            return int(open(path).read())
        if cluster.procs["scheduler"].poll() is not None:
            cluster.fail("the scheduler ended before it listened")
        time.sleep(0.02)
    cluster.fail("no port file from the scheduler")


def final_weights(text):
    """The last `Final weights: ...` line of a log, without a launcher's `[scheduler] ` prefix."""
    lines = [l[l.index("Final weights:"):] for l in text.splitlines() if "Final weights:" in l]
    return lines[-1] if lines else None


def start_launch(command, workdir):
    """`troupe launch ...` in a session of its own, its output merged and line-buffered (stdbuf's
    setting reaches the nodes through the environment), so the scheduler's progress lines arrive
    while the epoch runs; kill_group(proc.pid) ends it and everything it started."""
    return child_process.start(["stdbuf", "-oL"] + command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, cwd=workdir)


class MidEpochKill:
    """Reads a launch's merged output and SIGKILLs one node (or sends it `sig`) once the
    scheduler's progress line of epoch `epoch` passes half the epoch's batches (the start line's
    `compute(s) x N batches`): the victim's pid comes from the scheduler's line about `role`
    `rank`. `see` takes each line and says whether this line was the kill; `killed_at` is when."""

    PROGRESS = re.compile(r"\[scheduler\] Epoch\[(\d+)\] Batch \[(\d+)\]")

    def __init__(self, role, rank, epoch, sig=signal.SIGKILL):
        self.role, self.rank, self.epoch, self.sig = role, rank, str(epoch), sig
        self.victim = self.batches = self.killed_at = None
        self.progress = None  # the last progress line's match

    def see(self, line):
        m = re.search(rf"scheduler: {self.role} {self.rank} \(pid (\d+)", line)
        if m and self.victim is None:
            self.victim = int(m.group(1))
        m = re.search(r"compute\(s\) x (\d+) batches", line)
        if m:
            self.batches = int(m.group(1))
        self.progress = self.PROGRESS.search(line)
        m = self.progress
        if self.killed_at is not None or not m or not self.batches or m.group(1) != self.epoch \
                or int(m.group(2)) * 2 < self.batches:
            return False
        if self.victim is None:
            raise SystemExit(f"FAIL: no pid of {self.role} {self.rank} in the scheduler's log")
        os.kill(self.victim, self.sig)
        self.killed_at = time.time()
        print(f"sent {signal.Signals(self.sig).name} to {self.role} {self.rank} (pid {self.victim}) at {line.strip()}")
        return True


def watch_launch(proc, bound_s, see):
    """Hands each output line of launch `proc` to `see` until it ends or `bound_s` passes, then
    waits for its exit; returns the whole output. Fails unless it exited 0."""
    deadline, seen = time.time() + bound_s, []
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        see(line)
    proc.wait(max(1, deadline - time.time()))
    out = "".join(seen)
    if proc.returncode != 0:
        raise SystemExit(f"FAIL: launch exited {proc.returncode}\n{out[-5000:]}")
    return out


def require_in_log(out, patterns):
    """Every pattern is found in `out`; else the test fails naming the first one missing."""
    for pattern in patterns:
        if not re.search(pattern, out):
            raise SystemExit(f"FAIL: no /{pattern}/ in the log\n{out[-5000:]}")


def require_one_process_weights(troupe, config, flags, workdir, out, what):
    """The final weights line of `out` equals `troupe train`'s in one process; returns it."""
    got = final_weights(out)
    reference = in_process_weights(troupe, config, flags, workdir)
    if not got or got != reference:
        raise SystemExit(f"FAIL: {what}: {got}\nin one process: {reference}\n{out[-5000:]}")
    return got


def in_process_weights(troupe, config, flags, workdir):
    run = subprocess.run([troupe, "train", "--config", config] + flags, capture_output=True, text=True,
                         cwd=workdir, timeout=BOUND_S)
    assert run.returncode == 0, run.stderr
    line = final_weights(run.stdout)
    assert line and not line.startswith("Final weights: 0 tensors"), run.stdout[-2000:]
    return line


def start_by_hand(cluster, config, servers, workers, flags, extra=None):
    common = ["--config", config, "--server-nodes", str(servers), "--worker-nodes", str(workers)] + flags
    port_file = os.path.join(cluster.workdir, "scheduler.port")
    cluster.start("scheduler", ["--role", "scheduler", "--scheduler", "127.0.0.1:0", "--port-file", port_file]
                  + common + (extra or []))
    port = read_port(cluster, port_file)
    for s in range(servers):
        cluster.start(f"server{s}", ["--role", "server", "--scheduler", f"127.0.0.1:{port}"] + common + (extra or []))
    for w in range(workers):
        cluster.start(f"worker{w}", ["--role", "worker", "--scheduler", f"127.0.0.1:{port}"] + common + (extra or []))
    return port


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_from_environment(cluster, kind, config, servers, workers, flags):
    """Every node gets the same command line; its place comes from the launcher's variables."""
    port = free_port()  # these launchers pick the scheduler's port before starting anyone
    args = ["--config", config] + flags
    total = 1 + servers + workers
    roles = ["scheduler"] + ["server"] * servers + ["worker"] * workers
    for rank, role in enumerate(roles):
        if kind == "dmlc":
            env = {"DMLC_ROLE": role, "DMLC_PS_ROOT_URI": "127.0.0.1", "DMLC_PS_ROOT_PORT": str(port),
                   "DMLC_NUM_SERVER": str(servers), "DMLC_NUM_WORKER": str(workers)}
        else:
            env = {"SLURM_PROCID": str(rank), "SLURM_NTASKS": str(total), "SLURM_JOB_NODELIST": "localhost",
                   "TROUPE_SCHEDULER_PORT": str(port)}
        name = role if role == "scheduler" else f"{role}{rank}"
        cluster.start(name, args, env)


def run_mpi(troupe, config, servers, workers, flags, workdir):
    mpirun = shutil.which("mpirun")
    if not mpirun:
        print("skipped: no mpirun (Debian's openmpi-bin)")
        raise SystemExit(77)
    port = free_port()
    env = dict(os.environ, TROUPE_SECRET=SECRET)
    command = [mpirun, "--allow-run-as-root", "--oversubscribe", "-n", str(1 + servers + workers),
               "--mca", "oob_tcp_if_include", "lo", "--mca", "btl_tcp_if_include", "lo", "-x", "TROUPE_SECRET",
               troupe, "node", "--config", config, "--scheduler", f"127.0.0.1:{port}"] + flags
    proc = child_process.start(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               cwd=workdir)
    try:
        out, err = proc.communicate(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise SystemExit(f"FAIL: mpirun still runs after {BOUND_S} s\n{out[-3000:]}\n{err[-3000:]}")
    finally:
        kill_group(proc.pid)
    if proc.returncode != 0:
        raise SystemExit(f"FAIL: mpirun exited {proc.returncode}\n{out[-3000:]}\n{err[-3000:]}")
    got = final_weights(out)
    reference = in_process_weights(troupe, config, flags, workdir)
    if got != reference:
        raise SystemExit(f"FAIL: under mpirun: {got}\nin one process: {reference}\n{err[-3000:]}")
    # (mpirun merges the ranks' streams: count the marker, not whole lines)
    ranks = err.count("(mpi)")
    if ranks != servers + workers:
        raise SystemExit(f"FAIL: {ranks} nodes say they took their place from MPI\n{err[-3000:]}")
    print(f"ok: mpirun -n {1 + servers + workers}: every rank exited 0; {got} in both")


def run_launch_init(troupe, config, servers, workers, flags, workdir):
    """Fine-tuning in a cluster: a one-process run's checkpoint seeds a launched run
    (--init-from, its last layer fresh: --reset-layers fc3), whose servers each read it; the
    launched run ends with the weights of the same fine-tuning in one process, and not with
    those of a run from the initializer."""
    base = os.path.join(workdir, "base")
    seed = subprocess.run([troupe, "train", "--config", config, "--num-epochs", "1", "--model-prefix", base,
                           "--progress", "off", "--disp-batches", "0"],
                          capture_output=True, text=True, cwd=workdir, timeout=BOUND_S)
    if seed.returncode != 0:
        raise SystemExit(f"FAIL: the seeding run exited {seed.returncode}\n{seed.stderr[-3000:]}")
    tune = flags + ["--init-from", base + "-1", "--reset-layers", "fc3"]
    command = [troupe, "launch", "-n", str(workers), "-s", str(servers), "--config", config] + tune
    run = subprocess.run(command, capture_output=True, text=True, cwd=workdir, timeout=BOUND_S)
    if run.returncode != 0:
        raise SystemExit(f"FAIL: launch exited {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    for s in range(servers):
        if f"server_{s}: Initializing from {base}-0001.safetensors" not in run.stdout + run.stderr:
            raise SystemExit(f"FAIL: server_{s} did not say it starts from {base}-0001.safetensors")
    got = final_weights("\n".join(l.removeprefix("[scheduler] ") for l in run.stdout.splitlines()))
    reference = in_process_weights(troupe, config, tune, workdir)
    if got != reference:
        raise SystemExit(f"FAIL: launched from {base}-1: {got}\nin one process: {reference}")
    fresh = in_process_weights(troupe, config, flags, workdir)
    if got == fresh:
        raise SystemExit(f"FAIL: the launched run ended as a run from the initializer: {got}")
    print(f"ok: {servers} servers started from {base}-1 (fc3 fresh); launched = one process: {got}")


def run_launch(troupe, config, servers, workers, flags, workdir):
    command = [troupe, "launch", "-n", str(workers), "-s", str(servers), "--config", config] + flags
    run = subprocess.run(command, capture_output=True, text=True, cwd=workdir, timeout=BOUND_S)
    if run.returncode != 0:
        raise SystemExit(f"FAIL: launch exited {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    got = final_weights("\n".join(l.removeprefix("[scheduler] ") for l in run.stdout.splitlines()))
    reference = in_process_weights(troupe, config, flags, workdir)
    if got != reference:
        raise SystemExit(f"FAIL: launched: {got}\nin one process: {reference}")
    for prefix in ["[scheduler]"] + [f"[server {s}]" for s in range(servers)] + [f"[worker {w}]" for w in range(workers)]:
        if prefix not in run.stdout + run.stderr:
            raise SystemExit(f"FAIL: no output prefixed {prefix}")
    # Ctrl-C of a long launch: exit status 130, and nothing it started survives.
    # (the flags of this scenario must not hold --num-epochs: a flag is given once)
    proc = child_process.start(command + ["--num-epochs", "1000"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, cwd=workdir)
    try:
        deadline = time.time() + BOUND_S
        seen = ""
        while "Epoch[0] Batch" not in seen and time.time() < deadline:
            seen += proc.stdout.readline()
        children = descendants(proc.pid)
        if len(children) < 1 + servers + workers:
            raise SystemExit(f"FAIL: launch runs {len(children)} processes, expected {1 + servers + workers}")
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
        if proc.returncode != 130:
            raise SystemExit(f"FAIL: launch exited {proc.returncode} after SIGINT, expected 130\n{rest[-2000:]}")
        alive = [p for p in children if os.path.exists(f"/proc/{p}") and
                 open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"]
        if alive:
            raise SystemExit(f"FAIL: processes {alive} survived the launch's SIGINT")
        # launch passes Ctrl-C on: each node stops saying where it was, none is terminated
        said = {"[scheduler]": r"\[scheduler\] troupe node: interrupted in epoch \d+ (at|before)"}
        said.update({f"[server {s_}]": rf"\[server {s_}\] troupe node \(server\): interrupted" for s_ in range(servers)})
        said.update({f"[worker {w}]": rf"\[worker {w}\] troupe node \(worker\): interrupted (in epoch \d+|before)"
                     for w in range(workers)})
        for node, pattern in said.items():
            if not re.search(pattern, rest):
                raise SystemExit(f"FAIL: {node} does not say it was interrupted (/{pattern}/)\n{rest[-3000:]}")
        if "killed by signal" in rest:
            raise SystemExit(f"FAIL: a node was killed after launch's SIGINT\n{rest[-3000:]}")
    finally:
        kill_group(proc.pid)
    print(f"ok: launch -n {workers} -s {servers}: {got} as in one process; SIGINT: exit 130, "
          f"{len(children)} processes gone")


def check_same_weights(cluster, troupe, config, flags, workdir):
    codes = cluster.wait_all()
    if any(codes.values()):
        cluster.fail(f"exit statuses {codes}")
    reference = in_process_weights(troupe, config, flags, workdir)
    got = final_weights(cluster.text("scheduler", "out"))
    if got != reference:
        cluster.fail(f"cluster: {got}\nin one process: {reference}")
    if "Validation-accuracy=" not in cluster.text("scheduler", "out"):
        cluster.fail("the scheduler logged no validation accuracy")
    for name in codes:
        for stream in ("out", "err"):
            if "unexpected message" in cluster.text(name, stream):
                cluster.fail(f"{name} was sent a message it does not take:\n{cluster.text(name, stream)}")
    # A compressed hop's receiving end stands in front of the aggregator: the barrier's waits
    # are still asked of the aggregator itself.
    if "--compression" in flags and "Waited for:" not in cluster.text("scheduler", "out"):
        cluster.fail("a compressed run's scheduler logged no `Waited for:` line")
    print(f"ok: {len(codes)} processes exited 0; {got} in both")


def check_traffic(cluster, metrics_path, workers):
    log = cluster.text("scheduler", "out")
    start = re.search(r"\((\d+) parameters\).* x (\d+) batches of .*; (\d+) parameter shard\(s\), (\d+) push\(es\) per step",
                      log)
    if not start:
        cluster.fail("no start line with the plan's figures")
    parameters, steps, shards, pushes = map(int, start.groups())
    keys = int(re.search(r"Final weights: (\d+) tensors", log).group(1))
    model_bytes = 4 * parameters
    low = steps * model_bytes
    high = low + steps * (136 * pushes + 32 * keys)
    rows = [json.loads(line) for line in open(metrics_path)]
    if not rows or "config" not in rows[0]:
        cluster.fail("the metrics file does not open with the run's config record")
    rows = rows[1:]
    if not rows:
        cluster.fail("no epoch in the metrics file")
    for row in rows:
        traffic = row.get("traffic")
        if not traffic:
            cluster.fail(f"epoch {row['epoch']} has no traffic")
        names = sorted(traffic)
        worker_names = [n for n in names if n.startswith("worker_")]
        if len(worker_names) != workers or "server_0" not in names or "scheduler" not in names:
            cluster.fail(f"epoch {row['epoch']}: traffic of {names}")
        sent = received = 0
        for name in worker_names:
            kinds = traffic[name]["kinds"]
            push_tx, weights_rx = kinds["push"]["tx"], kinds["weights"]["rx"]
            # a worker's first step pulls the whole model once (one pull per shard)
            pulled = 1 if kinds.get("pull", {}).get("tx", 0) > 0 else 0
            pull_low, pull_high = pulled * model_bytes, pulled * (model_bytes + 136 * shards + 32 * keys)
            for what, value, lo, hi in (("push tx", push_tx, low, high),
                                        ("weights rx", weights_rx, low + pull_low, high + pull_high)):
                if not lo <= value <= hi:
                    cluster.fail(f"epoch {row['epoch']} {name} {what} {value} outside [{lo}, {hi}]")
            sent += push_tx
            received += weights_rx
        server = traffic["server_0"]["kinds"]
        if server["push"]["rx"] != sent or server["weights"]["tx"] != received:
            cluster.fail(f"epoch {row['epoch']}: server push rx {server['push']['rx']} / weights tx "
                         f"{server['weights']['tx']}, workers sent {sent} / received {received}")
    print(f"ok: {len(rows)} epochs; per worker and epoch push and weights within [{low}, {high}] bytes; "
          f"the server's figures equal the workers' sums")


def check_top_k(cluster, metrics_path, flags):
    k = int(flags[flags.index("--top-k") + 1])
    log = cluster.text("scheduler", "out")
    def logged(name, sep):
        return {(int(e), phase): float(v) for e, phase, v in
                re.findall(rf"^Epoch\[(\d+)\] (Train|Validation)-{name}{sep}([.\d]+)$", log, re.M)}
    top, accuracy = logged(f"top_k_accuracy_{k}", ": "), logged("accuracy", "=")
    rows = [r for r in (json.loads(line) for line in open(metrics_path)) if "epoch" in r]
    for row in rows:
        e = row["epoch"]
        if row.get("top_k") != k or not row["train_accuracy"] <= row.get("train_top_k_accuracy", -1) <= 1:
            cluster.fail(f"epoch {e}: top_k {row.get('top_k')}, train top-k {row.get('train_top_k_accuracy')}, "
                         f"accuracy {row['train_accuracy']}")
        if abs(top.get((e, "Train"), -1) - row["train_top_k_accuracy"]) > 5e-6:
            cluster.fail(f"epoch {e}: train top-k logged {top.get((e, 'Train'))}, metrics {row['train_top_k_accuracy']}")
        if not accuracy.get((e, "Validation"), 2) <= top.get((e, "Validation"), -1) <= 1:
            cluster.fail(f"epoch {e}: validation top-k {top.get((e, 'Validation'))}, "
                         f"accuracy {accuracy.get((e, 'Validation'))}")
        # the epoch's record carries its validation, as troupe train's does
        for name, logged_value in (("val_accuracy", accuracy.get((e, "Validation"))),
                                   ("val_top_k_accuracy", top.get((e, "Validation")))):
            if logged_value is None or abs(row.get(name, -1) - logged_value) > 5e-6:
                cluster.fail(f"epoch {e}: metrics {name} {row.get(name)}, log {logged_value}")
    print(f"ok: {len(rows)} epochs carry top-{k} accuracies from the workers")


def check_learns(cluster):
    codes = cluster.wait_all()
    if any(codes.values()):
        cluster.fail(f"exit statuses {codes}")
    accuracies = re.findall(r"Validation-accuracy=([0-9.]+)", cluster.text("scheduler", "out"))
    if not accuracies or float(accuracies[-1]) < 0.5:
        cluster.fail(f"validation accuracies {accuracies}")
    print(f"ok: {len(codes)} processes exited 0; validation accuracy {accuracies[-1]}")


def check_fault(cluster, scenario):
    cluster.wait_for_text("scheduler", "out", r"Epoch\[0\] Batch")
    victim = {"kill-worker": "worker1", "kill-server": "server0", "kill-scheduler": "scheduler",
              "stop-worker": "worker1"}[scenario]
    sent_at = time.time()
    os.killpg(cluster.procs[victim].pid, signal.SIGSTOP if scenario == "stop-worker" else signal.SIGKILL)
    others = {n: p for n, p in cluster.procs.items() if n != victim}
    deadline = sent_at + 30
    for name, p in others.items():
        try:
            p.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            cluster.fail(f"{name} still runs 30 s after {scenario}")
        if p.returncode == 0:
            cluster.fail(f"{name} exited 0 after {scenario}")
    noticed = time.time() - sent_at
    if scenario != "kill-scheduler" and "the run failed: scheduler:" in cluster.text("scheduler", "err"):
        cluster.fail("the scheduler's failure line says 'scheduler:' twice")
    if scenario != "kill-scheduler":
        role = re.match(r"[a-z]+", victim).group(0)  # its rank is its place in the join order
        if not re.search(rf"lost {role} \d+ \(pid {cluster.procs[victim].pid} ", cluster.text("scheduler", "err")):
            cluster.fail(f"the scheduler's log does not name the {role} (pid {cluster.procs[victim].pid})")
    else:  # each node names what it lost first: the scheduler, or a server that lost it
        for name in others:
            if not re.search(r"lost (the scheduler|server_\d+) at", cluster.text(name, "err")):
                cluster.fail(f"{name} does not say what it lost")
        if not any("lost the scheduler" in cluster.text(name, "err") for name in others):
            cluster.fail("no node says it lost the scheduler")
    if scenario == "stop-worker":
        os.killpg(cluster.procs[victim].pid, signal.SIGCONT)
        try:
            cluster.procs[victim].wait(30)
        except subprocess.TimeoutExpired:
            cluster.fail("the stopped worker, continued, did not exit")
        if cluster.procs[victim].returncode == 0:
            cluster.fail("the stopped worker exited 0")
    print(f"ok: {scenario}: every other process exited non-zero within {noticed:.1f} s")


def check_interrupt(cluster, metrics_path):
    cluster.wait_for_text("scheduler", "out", r"Epoch\[1\] Batch")  # epoch 0 is recorded
    scheduler = cluster.procs["scheduler"]
    os.kill(scheduler.pid, signal.SIGINT)
    deadline = time.time() + 30
    for name, p in cluster.procs.items():
        try:
            p.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            cluster.fail(f"{name} still runs 30 s after the scheduler's Ctrl-C")
        if name == "scheduler" and p.returncode != 130:
            cluster.fail(f"the interrupted scheduler exited {p.returncode}, not 130")
        if name != "scheduler" and p.returncode == 0:
            cluster.fail(f"{name} exited 0 after its scheduler was interrupted")
    if not re.search(r"troupe node: interrupted in epoch \d+", cluster.text("scheduler", "err")):
        cluster.fail("the scheduler does not say where the run was interrupted")
    lines = open(metrics_path).read().splitlines()
    rows = [json.loads(line) for line in lines]  # every line whole JSON
    if len(rows) < 2 or "config" not in rows[0] or "epoch" not in rows[1]:
        cluster.fail(f"the metrics file holds {len(rows)} lines, not the config record and an epoch")
    print(f"ok: interrupt-scheduler: exit 130, {len(rows) - 1} epoch record(s) kept, every node ended")


def check_coverage(cluster, victim_pid, metrics_path):
    """After the loss, validation covers the survivors' parts only: every validation line says
    so, naming the lost worker, and the metrics file's epoch lines carry val_samples of
    val_examples; a validation before the loss covers the whole set and says nothing."""
    lost = re.search(rf"lost worker (\d+) \(pid {victim_pid} ", cluster.text("scheduler", "err"))
    if not lost:
        cluster.fail("the scheduler does not name the killed worker's index")
    out = cluster.text("scheduler", "out")
    lines = re.findall(r"Epoch\[(\d+)\] Validation-(accuracy=|cross-entropy: )[0-9.]+(.*)", out)
    note = re.compile(rf" \(on (\d+) of (\d+) examples: worker {lost.group(1)} lost\)$")
    covered = {}  # epoch -> (samples, examples) said in the log; (None, None): the whole set
    for epoch, kind, rest in lines:
        said = note.match(rest)
        if rest and not said:
            cluster.fail(f"epoch {epoch}'s validation line ends in '{rest}', not a coverage note")
        if said and int(said.group(1)) >= int(said.group(2)):
            cluster.fail(f"epoch {epoch}: a coverage note of the whole set: '{rest}'")
        covered[int(epoch)] = (int(said.group(1)), int(said.group(2))) if said else (None, None)
    noted = [e for e, c in covered.items() if c[0] is not None]
    if not noted or max(noted) != max(covered):
        cluster.fail("the last validation after the loss does not say what it covers")
    if any(covered[e][0] is None for e in covered if e > min(noted)):
        cluster.fail("a validation after the loss says nothing of its coverage")
    with open(metrics_path) as f:
        records = [json.loads(l) for l in f if l.strip()]
    for r in records:
        if "val_accuracy" not in r:
            continue
        samples, examples = covered.get(int(r["epoch"]), (None, None))
        if "val_samples" not in r or "val_examples" not in r:
            cluster.fail(f"epoch {r['epoch']}'s metrics line lacks val_samples or val_examples: {r}")
        if samples is None and r["val_samples"] != r["val_examples"]:
            cluster.fail(f"epoch {r['epoch']}: {r['val_samples']} of {r['val_examples']} validated, the log says all")
        if samples is not None and (r["val_samples"], r["val_examples"]) != (samples, examples):
            cluster.fail(f"epoch {r['epoch']}: the metrics file says {r['val_samples']} of {r['val_examples']}, "
                         f"the log {samples} of {examples}")
    last = covered[max(noted)]
    print(f"ok: validation after the loss says it covers {last[0]} of {last[1]} examples (worker "
          f"{lost.group(1)} lost), in the log and the metrics file")


def check_continue(cluster, ssp=False, metrics_path=None):
    cluster.wait_for_text("scheduler", "out", r"Epoch\[0\] Batch")
    victim = cluster.procs["worker1"]
    os.killpg(victim.pid, signal.SIGKILL)
    others = {n: p for n, p in cluster.procs.items() if n != "worker1"}
    for name, p in others.items():
        try:
            p.wait(BOUND_S)
        except subprocess.TimeoutExpired:
            cluster.fail(f"{name} still runs {BOUND_S} s after the worker was killed")
        if p.returncode != 0:
            cluster.fail(f"{name} exited {p.returncode}; the run should have gone on")
    try:
        victim.wait(10)
    except subprocess.TimeoutExpired:
        cluster.fail("the killed worker is still there")
    if not re.search(rf"lost worker \d+ \(pid {victim.pid} .*the run goes on without it", cluster.text("scheduler", "err")):
        cluster.fail("the scheduler does not say it goes on without the killed worker")
    if ssp and not re.search(r"lost worker_\d+ at .*the shards here no longer wait for compute_\d+",
                             cluster.text("server0", "err")):
        cluster.fail("the server does not say its shards stopped waiting for the killed worker")
    epochs = re.findall(r"Epoch\[(\d+)\] Validation-accuracy=", cluster.text("scheduler", "out"))
    if not epochs:
        cluster.fail("no validation after the loss")
    if metrics_path:
        check_coverage(cluster, victim.pid, metrics_path)
    print(f"ok: the run went on without the killed worker to epoch {epochs[-1]}; every other process exited 0")


def check_transport(cluster, workers, transport):
    # Every worker says how it reached the servers: same-host peers take local sockets unless
    # --local-sockets off.
    for w in range(workers):
        if f"servers over {transport})" not in cluster.text(f"worker{w}", "err"):
            cluster.fail(f"worker{w} did not reach the servers over {transport}")
    print(f"ok: {workers} workers reached the servers over {transport}")


def with_cluster_keys(config, keys, workdir):
    """A copy of `config` (in workdir) whose one-line cluster block also says `keys`."""
    text = open(config).read()
    changed = re.sub(r"^(cluster\s*\{[^}\n]*)\}", lambda m: m.group(1) + " " + keys + " }", text, count=1, flags=re.M)
    if changed == text:
        raise SystemExit(f"FAIL: {config} has no one-line cluster block to add '{keys}' to")
    path = os.path.join(workdir, "stated_" + os.path.basename(config))
    with open(path, "w") as f:
        f.write(changed)
    return path


def check_paced(cluster, servers, workers, mbit):
    # Each node says its share of the link (workers: rate / servers, servers: rate / workers) and
    # each worker that its pushes go in a fixed order; the only worker, that they go by rank.
    for name, peers in [(f"server{s}", workers) for s in range(servers)] + [(f"worker{w}", servers) for w in range(workers)]:
        share = int(mbit * 1e6 / 8) // peers
        unsent = max(256 * 1024, share // 1000)  # paced_unsent_bytes: a millisecond of the share, at least 256 KiB
        err = cluster.text(name, "err")
        if f"TCP channels paced at {share} bytes/s each, at most {unsent} bytes unsent in the kernel" not in err:
            cluster.fail(f"{name} does not say its channels are paced at {share} bytes/s with at most {unsent} bytes unsent")
        if not name.startswith("worker"):
            continue
        ordered = "pushes in a fixed order (" in err
        by_rank = "pushes by rank as they come (the only worker: no fixed order)" in err
        if workers > 1 and not (ordered and not by_rank):
            cluster.fail(f"{name} does not say its pushes go in a fixed order")
        if workers == 1 and not (by_rank and not ordered):
            cluster.fail(f"{name}, the only worker, does not say its pushes go by rank as they come")
    print(f"ok: {servers + workers} nodes paced their channels at their share of {mbit} Mbit/s, "
          f"{'pushes in a fixed order' if workers > 1 else 'the only worker pushing by rank'}")


def expect_failure(cluster, name, args, pattern, within):
    started = time.time()
    p = cluster.start(name, args)
    try:
        p.wait(within + 30)
    except subprocess.TimeoutExpired:
        cluster.fail(f"{name} still runs {within + 30} s after it started")
    if p.returncode == 0:
        cluster.fail(f"{name} exited 0")
    if not re.search(pattern, cluster.text(name, "err")):
        cluster.fail(f"{name}'s error does not match /{pattern}/")
    return time.time() - started


def check_start_errors(cluster, config, flags):
    common = ["--config", config] + flags
    port = free_port()
    took = expect_failure(cluster, "orphan", ["--role", "worker", "--scheduler", f"127.0.0.1:{port}",
                                              "--join-timeout", "2"] + common,
                          rf"no scheduler at 127\.0\.0\.1:{port} within 2 s \(--join-timeout\)", 2)
    lonely = expect_failure(cluster, "lonely", ["--role", "scheduler", "--scheduler", "127.0.0.1:0",
                                                "--join-timeout", "2"] + common,
                            r"gave up after 2 s \(--join-timeout\): 0/1 servers joined, 0/2 workers joined; "
                            r"waiting for server 0", 2)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        expect_failure(cluster, "taken", ["--role", "scheduler", "--scheduler", f"127.0.0.1:{taken}",
                                          "--join-timeout", "5"] + common,
                       rf"cannot listen on 127\.0\.0\.1:{taken}", 5)
        # A server's port in use: said at once, before it waits for a scheduler (none listens
        # here: a server that waited would end with "no scheduler" instead).
        expect_failure(cluster, "taken-server", ["--role", "server", "--scheduler", f"127.0.0.1:{port}",
                                                 "--port", str(taken), "--join-timeout", "5"] + common,
                       rf"cannot listen on 127\.0\.0\.1:{taken}: Address already in use \(--listen, --port\)", 5)
        if "no scheduler" in cluster.text("taken-server", "err"):
            cluster.fail("the server with a port in use waited for a scheduler first")
    port_file = os.path.join(cluster.workdir, "scheduler.port")
    cluster.start("scheduler", ["--role", "scheduler", "--scheduler", "127.0.0.1:0", "--port-file", port_file,
                                "--join-timeout", "20"] + common)
    port = read_port(cluster, port_file)
    expect_failure(cluster, "other", ["--role", "worker", "--scheduler", f"127.0.0.1:{port}"] + common
                   + ["--lr", "0.5"], r"refused by the scheduler: its config resolves to another job \(hash [0-9a-f]{16}, "
                                      r"the scheduler's [0-9a-f]{16}\): optimizer lr 0\.5 \(the scheduler's 0\.02\); "
                                      r"start every node with the same config", 20)
    cluster.kill_all()
    # A server that says it listens where it does not: the worker's error names the flags.
    cluster.procs.clear()
    port_file = os.path.join(cluster.workdir, "scheduler2.port")
    cluster.start("scheduler", ["--role", "scheduler", "--scheduler", "127.0.0.1:0", "--port-file", port_file,
                                "--join-timeout", "20", "--server-nodes", "1", "--worker-nodes", "1",
                                "--workers", "1"] + common)
    port = read_port(cluster, port_file)
    at = ["--scheduler", f"127.0.0.1:{port}", "--server-nodes", "1", "--worker-nodes", "1", "--workers", "1"]
    cluster.start("server0", ["--role", "server", "--advertise", "127.0.0.2"] + at + common)
    expect_failure(cluster, "worker0", ["--role", "worker"] + at + common,
                   r"server_0: cannot connect to 127\.0\.0\.2:\d+.*start the server with --listen or --advertise", 20)
    cluster.kill_all()
    print(f"ok: no scheduler ({took:.1f} s), nobody joining ({lonely:.1f} s), a port in use and another job: "
          f"one clear line each and a non-zero exit")


def no_omp_environment():
    """Our environment without OMP_NUM_THREADS, which would be a thread count of its own."""
    return {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}


def check_worker_threads(text_of, names, threads):
    """Each worker's log says its computes run on `threads` threads."""
    for name in names:
        if not re.search(rf"worker_\d+: ready \(.*computes? on {threads} threads?", text_of(name)):
            raise SystemExit(f"FAIL: {name} does not say its computes run on {threads} thread(s)\n{text_of(name)[-2000:]}")


def run_threads(troupe, config, servers, workers, flags, workdir):
    """The scheduler's --threads reaches every worker; without one, launch splits the host."""
    os.environ.pop("OMP_NUM_THREADS", None)  # every node and run below inherits this
    cluster = Cluster(troupe, workdir)
    try:
        common = ["--config", config, "--server-nodes", str(servers), "--worker-nodes", str(workers)] + flags
        port_file = os.path.join(workdir, "scheduler.port")
        cluster.start("scheduler", ["--role", "scheduler", "--scheduler", "127.0.0.1:0", "--port-file", port_file,
                                    "--threads", "1"] + common)
        port = read_port(cluster, port_file)
        for s_ in range(servers):
            cluster.start(f"server{s_}", ["--role", "server", "--scheduler", f"127.0.0.1:{port}"] + common)
        for w in range(workers):
            cluster.start(f"worker{w}", ["--role", "worker", "--scheduler", f"127.0.0.1:{port}"] + common)
        codes = cluster.wait_all()
        if any(codes.values()):
            cluster.fail(f"exit statuses {codes}")
        check_worker_threads(lambda n: cluster.text(n, "err"), [f"worker{w}" for w in range(workers)], 1)
        summary = ", ".join(f"worker_{w} 1" for w in range(workers))
        if f"compute threads: {summary}" not in cluster.text("scheduler", "err"):
            cluster.fail(f"the scheduler's summary does not say 'compute threads: {summary}'")
        got = final_weights(cluster.text("scheduler", "out"))
        reference = in_process_weights(troupe, config, flags + ["--threads", "1"], workdir)
        if got != reference:
            cluster.fail(f"by hand, --threads 1 to the scheduler: {got}\nin one process: {reference}")
        # A worker given another count than the scheduler's is refused, naming both.
        cluster.procs.clear()
        port_file = os.path.join(workdir, "scheduler2.port")
        small = ["--server-nodes", "1", "--worker-nodes", "1", "--workers", "1", "--join-timeout", "20"]
        cluster.start("scheduler", ["--role", "scheduler", "--scheduler", "127.0.0.1:0", "--port-file", port_file,
                                    "--threads", "1", "--config", config] + small + flags)
        at = ["--scheduler", f"127.0.0.1:{read_port(cluster, port_file)}", "--config", config] + small + flags
        cluster.start("server0", ["--role", "server"] + at)
        cluster.start("worker0", ["--role", "worker", "--threads", "2"] + at)
        codes = cluster.wait_all()
        if not all(codes.values()):
            cluster.fail(f"exit statuses {codes}: a worker with another thread count must end the run")
        refusal = r"this node was given 2 compute threads \(--threads or train\.threads\), the scheduler 1"
        for name in ("worker0", "scheduler"):
            if not re.search(refusal, cluster.text(name, "err")):
                cluster.fail(f"{name} does not say the worker's thread count is not the scheduler's")
    finally:
        cluster.kill_all()
    share = max(1, (os.cpu_count() or 1) // workers)
    command = [troupe, "launch", "-n", str(workers), "-s", str(servers), "--config", config] + flags
    run = subprocess.run(command, capture_output=True, text=True, cwd=workdir, timeout=BOUND_S)
    if run.returncode != 0:
        raise SystemExit(f"FAIL: launch exited {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    lines = run.stdout + run.stderr
    check_worker_threads(lambda n: "\n".join(l for l in lines.splitlines() if l.startswith(f"[{n}]")),
                         [f"worker {w}" for w in range(workers)], share)
    # Each launched worker's computes are bound to its own share of the CPUs: share x w on.
    cpu_count = os.cpu_count() or 1
    for w in range(workers):
        first, last = w * share, w * share + share - 1
        bound = f"bound to CPU {first}" if share == 1 else f"bound to CPUs {first}-{last}"
        worker_lines = "\n".join(l for l in lines.splitlines() if l.startswith(f"[worker {w}]"))
        if workers * share <= cpu_count and bound + "," not in worker_lines:
            raise SystemExit(f"FAIL: worker {w} does not say its computes are {bound}\n{worker_lines[-2000:]}")
    # Given a thread count, nothing is bound (the by-hand run above, --threads 1 to the scheduler).
    for w in range(workers):
        if "bound to CPU" in cluster.text(f"worker{w}", "err"):
            raise SystemExit(f"FAIL: worker{w} was bound although the scheduler gave a thread count")
    launched = final_weights("\n".join(l.removeprefix("[scheduler] ") for l in run.stdout.splitlines()))
    reference = in_process_weights(troupe, config, flags + ["--threads", str(share)], workdir)
    if launched != reference:
        raise SystemExit(f"FAIL: launched with {share} thread(s) per worker: {launched}\n"
                         f"troupe train --threads {share}: {reference}")
    print(f"ok: --threads 1 to the scheduler reached {workers} workers ({got}); launch gave each worker "
          f"{share} of {os.cpu_count()} hardware threads ({launched}); both as in one process")


def run_launch_network(troupe, servers, workers, flags, workdir):
    """launch without a config: one compute per worker process, as `troupe train --workers N`."""
    os.environ.pop("OMP_NUM_THREADS", None)
    job = ["--network", "mlp", "--dataset", "synthetic", "--image-shape", "1,12,12", "--num-examples", "256",
           "--num-epochs", "1", "--batch-size", "32", "--progress", "off"] + flags
    run = subprocess.run([troupe, "launch", "-n", str(workers), "-s", str(servers)] + job, capture_output=True,
                         text=True, cwd=workdir, timeout=BOUND_S)
    if run.returncode != 0:
        raise SystemExit(f"FAIL: launch --network mlp exited {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    got = final_weights("\n".join(l.removeprefix("[scheduler] ") for l in run.stdout.splitlines()))
    share = max(1, (os.cpu_count() or 1) // workers)
    reference = subprocess.run([troupe, "train", "--workers", str(workers), "--threads", str(share)] + job,
                               capture_output=True, text=True, cwd=workdir, timeout=BOUND_S)
    if reference.returncode != 0 or final_weights(reference.stdout) != got:
        raise SystemExit(f"FAIL: launched: {got}\ntroupe train --workers {workers}: {final_weights(reference.stdout)}\n"
                         f"{reference.stderr[-2000:]}")
    print(f"ok: launch -n {workers} -s {servers} --network mlp trained {workers} computes: {got} as in one process")


def check_interrupt_worker(cluster):
    cluster.wait_for_text("scheduler", "out", r"Epoch\[0\] Batch")
    worker = cluster.procs["worker1"]
    os.kill(worker.pid, signal.SIGINT)
    try:
        worker.wait(30)
    except subprocess.TimeoutExpired:
        cluster.fail("the interrupted worker still runs 30 s after SIGINT")
    if worker.returncode != 130:
        cluster.fail(f"the interrupted worker exited {worker.returncode}, not 130")
    if not re.search(r"troupe node \(worker\): interrupted in epoch \d+ (at batch \d+ of \d+|at validation|before its first batch)",
                     cluster.text("worker1", "err")):
        cluster.fail("the interrupted worker does not say where it was")
    deadline = time.time() + 30
    for name, p in cluster.procs.items():
        try:
            p.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            cluster.fail(f"{name} still runs 30 s after a worker's Ctrl-C")
        if name != "worker1" and p.returncode == 0:
            cluster.fail(f"{name} exited 0 after a worker was interrupted")
    print("ok: interrupt-worker: the worker said where it was and exited 130; every other node ended")


def run_one_write(troupe, workdir):
    """Each line of a usage error is one write(2): read from a datagram socket, a line cut into
    several writes arrives as several datagrams."""
    cases = [["node", "--role", "worker", "--scheduler", "127.0.0.1:1", "--bogus-flag"],
             ["node", "--role", "worker", "--scheduler", "127.0.0.1:1", "--port", "70000"],
             ["node", "--role", "worker", "--scheduler", "127.0.0.1:1"]]  # no secret
    env = {k: v for k, v in os.environ.items() if k != "TROUPE_SECRET"}
    for args in cases:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            proc = subprocess.run([troupe] + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=theirs.fileno(), cwd=workdir, env=env, timeout=30)
            theirs.close()
            ours.settimeout(5)
            writes = []
            while True:
                chunk = ours.recv(65536)
                if not chunk:
                    break
                writes.append(chunk.decode())
        finally:
            ours.close()
        if proc.returncode != 2:
            raise SystemExit(f"FAIL: troupe {' '.join(args)} exited {proc.returncode}, expected 2")
        if not writes or any(not w.endswith("\n") for w in writes):
            raise SystemExit(f"FAIL: troupe {' '.join(args)} wrote its error in pieces: {writes}")
    print(f"ok: {len(cases)} usage errors, each line one write")


def raw_garbage(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        try:
            s.sendall(bytes(random.getrandbits(8) for _ in range(4096)))
        except (ConnectionResetError, BrokenPipeError):
            return  # refused before it read everything: what should happen
        s.settimeout(2)
        try:
            s.recv(4096)  # the node's goodbye (a Shutdown frame), or its close
        except (socket.timeout, ConnectionResetError):
            pass


def main(workdir):
    troupe, scenario, config, servers, workers = sys.argv[1:6]
    troupe, config = os.path.abspath(troupe), os.path.abspath(config)
    servers, workers = int(servers), int(workers)
    flags = sys.argv[6:]
    cluster = Cluster(troupe, workdir)
    try:
        if scenario in ("same-weights", "learns"):
            start_by_hand(cluster, config, servers, workers, flags)
            check_same_weights(cluster, troupe, config, flags, workdir) if scenario == "same-weights" \
                else check_learns(cluster)
            check_transport(cluster, workers, "local sockets")
        elif scenario == "same-weights-tcp":
            start_by_hand(cluster, config, servers, workers, flags, ["--local-sockets", "off"])
            check_same_weights(cluster, troupe, config, flags, workdir)
            check_transport(cluster, workers, "TCP")
        elif scenario == "same-weights-paced":
            # Channels paced at a share of a stated link, pushes in a fixed order: the same weights.
            start_by_hand(cluster, config, servers, workers, flags, ["--local-sockets", "off", "--link-mbit", "10000"])
            check_same_weights(cluster, troupe, config, flags, workdir)
            check_paced(cluster, servers, workers, 10000)
        elif scenario == "same-weights-paced-config":
            # The same, the rate stated once in the config (cluster.link_mbit) instead of on every node.
            stated = with_cluster_keys(config, "link_mbit = 10000", workdir)
            start_by_hand(cluster, stated, servers, workers, flags, ["--local-sockets", "off"])
            check_same_weights(cluster, troupe, stated, flags, workdir)
            check_paced(cluster, servers, workers, 10000)
        elif scenario == "same-weights-paced-overridden":
            # A node's --link-mbit overrides the config's: 0 on every node, no channel paced.
            stated = with_cluster_keys(config, "link_mbit = 10000", workdir)
            start_by_hand(cluster, stated, servers, workers, flags, ["--local-sockets", "off", "--link-mbit", "0"])
            check_same_weights(cluster, troupe, stated, flags, workdir)
            for name in [f"server{s}" for s in range(servers)] + [f"worker{w}" for w in range(workers)]:
                if "TCP channels paced" in cluster.text(name, "err") or "fixed order" in cluster.text(name, "err"):
                    cluster.fail(f"{name} paced its channels or ordered its pushes although --link-mbit 0 said not to")
            print(f"ok: --link-mbit 0 overrode the config's link_mbit on {servers + workers} nodes")
        elif scenario == "traffic":
            metrics_path = os.path.join(workdir, "metrics.jsonl")
            start_by_hand(cluster, config, servers, workers, flags, ["--metrics", metrics_path])
            check_same_weights(cluster, troupe, config, flags, workdir)
            check_traffic(cluster, metrics_path, workers)
            if "--top-k" in flags:
                check_top_k(cluster, metrics_path, flags)
        elif scenario == "launch":
            run_launch(troupe, config, servers, workers, flags, workdir)
        elif scenario == "launch-init":
            run_launch_init(troupe, config, servers, workers, flags, workdir)
        elif scenario == "threads":
            run_threads(troupe, config, servers, workers, flags, workdir)
        elif scenario == "launch-network":
            run_launch_network(troupe, servers, workers, flags, workdir)
        elif scenario == "interrupt-worker":
            start_by_hand(cluster, config, servers, workers, flags, ["--heartbeat", "0.2", "--peer-timeout", "2"])
            check_interrupt_worker(cluster)
        elif scenario == "one-write":
            run_one_write(troupe, workdir)
        elif scenario == "mpi":
            run_mpi(troupe, config, servers, workers, flags, workdir)
        elif scenario in ("dmlc", "slurm"):
            start_from_environment(cluster, scenario, config, servers, workers, flags)
            check_same_weights(cluster, troupe, config, flags, workdir)
        elif scenario in ("kill-worker", "kill-server", "kill-scheduler", "stop-worker"):
            start_by_hand(cluster, config, servers, workers, flags,
                          ["--heartbeat", "0.2", "--peer-timeout", "2"])
            check_fault(cluster, scenario)
        elif scenario == "interrupt-scheduler":
            metrics_path = os.path.join(workdir, "metrics.jsonl")
            start_by_hand(cluster, config, servers, workers, flags,
                          ["--heartbeat", "0.2", "--peer-timeout", "2", "--metrics", metrics_path])
            check_interrupt(cluster, metrics_path)
        elif scenario in ("continue-after-kill", "continue-after-kill-ssp"):
            metrics_path = os.path.join(workdir, "metrics.jsonl")
            start_by_hand(cluster, config, servers, workers, flags + ["--on-worker-loss", "continue"],
                          ["--heartbeat", "0.2", "--peer-timeout", "2", "--metrics", metrics_path])
            check_continue(cluster, ssp=scenario.endswith("-ssp"), metrics_path=metrics_path)
        elif scenario == "ranks":
            common = ["--config", config, "--server-nodes", str(servers), "--worker-nodes", str(workers)] + flags
            port_file = os.path.join(workdir, "scheduler.port")
            cluster.start("scheduler", ["--role", "scheduler", "--scheduler", "127.0.0.1:0", "--port-file", port_file]
                          + common)
            port = read_port(cluster, port_file)
            at = ["--scheduler", f"127.0.0.1:{port}"]
            first = cluster.start("worker0", ["--role", "worker", "--rank", str(workers - 1)] + at + common)
            cluster.wait_for_text("scheduler", "err", rf"worker {workers - 1} \(pid {first.pid} ")
            twin = cluster.start("twin", ["--role", "worker", "--rank", str(workers - 1), "--join-timeout", "5"] + at + common)
            if twin.wait(BOUND_S) == 0:
                cluster.fail("a worker asking for a taken rank exited 0")
            if not re.search(rf"worker rank {workers - 1} is taken by worker {workers - 1} \(pid {first.pid} ",
                             cluster.text("twin", "err")):
                cluster.fail("the refused worker is not told who holds its rank")
            del cluster.procs["twin"]
            for w in range(workers - 1):
                cluster.start(f"worker{w + 1}", ["--role", "worker", "--rank", str(workers - 2 - w)] + at + common)
            for s_ in range(servers):
                cluster.start(f"server{s_}", ["--role", "server"] + at + common)
            check_same_weights(cluster, troupe, config, flags, workdir)
        elif scenario == "start-errors":
            check_start_errors(cluster, config, flags)
        elif scenario == "wrong-secret":
            port = start_by_hand(cluster, config, servers, workers, flags)
            cluster.wait_for_text("server0", "err", r"listening on")
            intruder = cluster.start("intruder", ["--role", "worker", "--scheduler", f"127.0.0.1:{port}",
                                                  "--config", config, "--join-timeout", "5"] + flags,
                                     secret="another-secret-0123456789abcdef")
            server_port = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", cluster.text("server0", "err")).group(1))
            for target in (port, server_port):
                try:
                    raw_garbage(target)
                except OSError as e:
                    cluster.fail(f"cannot reach port {target}: {e}")
            status = intruder.wait(BOUND_S)
            said = cluster.text("intruder", "err")
            if status != 1:
                cluster.fail(f"the node with a wrong secret exited {status}, not 1:\n{said}")
            if "proof of the cluster secret is wrong" not in said:
                cluster.fail("the intruder was not told its proof is wrong")
            # A refusal is final: no retry (the refusal is no lost scheduler), one line saying so.
            tries = said.count("refused: its proof of the cluster secret is wrong")
            if "retries" in said or tries != 1:
                cluster.fail(f"the refused node tried again ({tries} refusals):\n{said[:2000]}")
            del cluster.procs["intruder"]
            check_same_weights(cluster, troupe, config, flags, workdir)
            if "proof of the cluster secret is wrong" not in cluster.text("scheduler", "err"):
                print(cluster.text("intruder", "err"))
                cluster.fail("the scheduler did not log the refused proof")
            # One intruder and one raw client: a line each, within the refusal log's budget.
            refusals = len(re.findall(r"refused", cluster.text("scheduler", "err")))
            if refusals > 5:
                cluster.fail(f"the scheduler logged {refusals} refusals for two refused peers")
        else:
            raise SystemExit(f"unknown scenario {scenario}")
    finally:
        cluster.kill_all()


if __name__ == "__main__":
    with work_folder(f"troupe-{sys.argv[2]}-") as folder:
        main(folder)
