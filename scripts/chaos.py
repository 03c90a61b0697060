#!/usr/bin/env python3
"""Chaos runs: a small BSP job across real processes, and per trial one node
lost in one way at one moment; the outcome is checked against what the job's policy says.

usage: chaos.py TROUPE [--trials N] [--seed S] [--trial K] [--ways W,..] [--roles R,..]
                       [--moments M,..] [--variants V,..] [--compressions C,..] [--keep]
                       [--json FILE]

Each trial draws, from random.Random("S:K") (so `--seed S --trial K` replays trial K alone):
  variant  a job configuration (the VARIANTS table): the BSP job with on_worker_loss = stop
           (given: bsp's default is adopt), its nodes started by hand (each `troupe node` with --rank)
           or by one `troupe launch` (a node's pid and exit status from launch's records,
           launch.jsonl), or async with
           on_worker_loss = continue; bsp-backups (--shard-backups 1), bsp-adopt (on_worker_loss =
           adopt), async-adopt and local_sync-adopt (the job in those topologies with adopt: it
           finishes, its weights unchecked as they are not deterministic), hierarchical-adopt (a
           machine per worker process: it finishes with the one-process digest), bsp-spare
           (adopt, under launch --spares 1) and bsp-join (four computes; a third worker process
           joins once training and takes one of the busiest worker's two), taken only when the binary
           supports them (found from `troupe node --help` / `troupe launch --help`). Jobs that save every epoch under
           launch with --max-restarts 1 (bsp-restarts, run by scripts/chaos_restarts.py: read
           its docstring) or 0 (bsp-no-restarts: a loss stops them as without checkpoints)
  victim   the scheduler, a server (server_0, server_1) or a worker (worker_0, worker_1)
  way      none (nothing is lost: the control trial), kill (SIGKILL), stop (SIGSTOP held until
           every other process has gone, or the bound; then SIGCONT: it must exit by itself),
           thaw (SIGSTOP, then SIGCONT once the scheduler has fenced it: a frozen node that runs
           again after its part moved; drawn for a victim the variant survives losing, a worker
           where workers are adopted, a server with backups; it must end by itself, fenced: exit
           status 3),
           cut (the victim's veth set down, every node in its own network namespace, through
           tests/apps/cluster_netns.py; only as root, otherwise the trial is skipped, saying so),
           all (every process of the job SIGKILLed: only for jobs that restart)
  moment   join (the scheduler's `admitted` record of the victim; for the scheduler, the first),
           mid-epoch (its `batch` record of epoch k), validation (`trained` of epoch k:
           validation runs next), boundary (`validated` of epoch k: the next epoch starts),
           ending (the last epoch's `validated`: the final weights are pulled and the run ends);
           checkpoint (`saving` of epoch k+1: jobs that save), resume (the restarted job's
           `restoring`: jobs that restart), promotion (jobs with --shard-backups 1: another server
           SIGKILLed at epoch k's `batch` first, the victim faulted at the scheduler's
           `promotion` of that server's backups: a second loss, which stops the run)
and, from random.Random("S:K:compression") (so the draws above stay those of earlier
versions), the compression of the job's gradient hop (`--compression`: none, fp16 and 2bit:fit
both ways for bsp-stop and bsp-launch; those and pushes only, push:fp16 and push:2bit:fit, for
bsp-backups (a promoted backup answers compressed as the lost primary would have); push:fp16
for async-continue;
none elsewhere: adopt refuses compression), unless --compressions narrows it.
A moment is found from the nodes' event records (`troupe node --events`, docs/operations.md
"Event records") as they are written, never by sleeping nor from log lines; the records at the
fault say whether it landed where meant (printed as `landed` or `late`).

The expected outcome comes from the first row of the EXPECT table that matches the trial:
  finishes      every process exits 0 and the scheduler's final weights digest equals
                `troupe train`'s for the same config in one process (the scheduler's `ended` record)
  stops         every process but the victim exits non-zero within DETECT_BOUND_S of the fault,
                and each one's error (the reason of its `ended` record) names the victim (server_1 / worker_0 as the members
                say it, `server 1 (pid P` as the scheduler says it, or `the scheduler`); a stopped
                or cut-off victim exits non-zero by itself once it runs or hears nothing again
  goes-on       (on_worker_loss = continue) the others finish the run and exit 0, the scheduler
                recording that it goes on without the lost worker (`dropped`)
  finishes-or-stops  (the ending moment) either of the first two, whichever the run reached
Besides, no process of a trial may be left: every node runs in its own session; after the
trial any process still in one of them is killed and the trial FAILS. Every wait is bounded.

Prints one line per trial (seed, trial, variant, victim, way, moment, outcome, seconds from
the fault to the last process gone), a tally, and the tally by axis (variant, topology,
compression, a change under way, role, way, moment); exits 1 if a trial failed, 0 otherwise.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))
# The process handling and the job configs shared with the cluster tests: beside this script in an
# installed prefix (cmake --install puts them in share/troupe/scripts), else the tests' own.
SHARED = HERE if os.path.exists(os.path.join(HERE, "cluster_run.py")) else os.path.join(
    os.path.dirname(HERE), "tests", "apps")
sys.path.insert(0, SHARED)
import cluster_run  # noqa: E402  (process handling shared with the cluster tests)
import cluster_netns  # noqa: E402  (network namespaces)
sys.path.insert(0, HERE)
import child_process  # noqa: E402  (the one launcher of child processes)
import node_records  # noqa: E402  (the nodes' event records)
import chaos_restarts  # noqa: E402  (the trials of jobs that restart)

CONFIGS = os.path.join(SHARED, "configs")
HEARTBEAT, PEER_TIMEOUT, JOIN_TIMEOUT = "0.2", "2", "30"
SCHEDULER_TIMEOUT = "8"  # a member that lost its scheduler trains on and waits this long for a restarted one
FEATURES = set()  # what the binary supports (features()), set by main
START_BOUND_S = 60    # from the start to the moment
DETECT_BOUND_S = 45   # from the fault to every other process gone (peer timeout + goodbye grace + slack;
                     # a node that never joined: its join timeout)
RUN_BOUND_S = 120     # a run nothing is lost in
VICTIM_BOUND_S = 20   # a stopped victim, continued, or a cut-off one, to exit by itself
POLL_S = 0.005

SERVERS, WORKERS = 2, 2
NODES = ["scheduler"] + [f"server_{i}" for i in range(SERVERS)] + [f"worker_{i}" for i in range(WORKERS)]


# ---- what the binary supports ----------------------------------------------------------------

def features(troupe):
    """Which fault-tolerance features this binary has, from its help texts."""
    def help_of(*command):
        try:
            run = subprocess.run([troupe] + list(command) + ["--help"], capture_output=True, text=True, timeout=30)
            return run.stdout + run.stderr
        except (OSError, subprocess.TimeoutExpired):
            return ""
    node, launch = help_of("node"), help_of("launch")
    if "--events" not in node:
        raise SystemExit(f"chaos.py: {troupe} has no `troupe node --events`: the trials take pids and "
                         "moments from the nodes' event records")
    found = set()
    if "--shard-backups" in node or "--shard-backups" in launch:
        found.add("backups")

    if "--spares" in launch:
        found.add("spares")
    if "--max-restarts" in launch:
        found.add("max-restarts")
    if re.search(r"on-worker-loss[^\n]*\n[^\n]*adopt", node):
        found.add("adopt")
    if re.search(r"on-worker-loss[^\n]*\n[^\n]*adopt[^\n]*\n?[^\n]*every topology", node):
        found.add("adopt-any")
    if "--scheduler-timeout" in node:
        found.add("scheduler-restart")
    if "--compute-stand-in-shared" in node:  # the version whose joiners take ranks one by one
        found.add("rank-moves")
    try:  # checkpoints: launch refuses them, before starting anything, while they are not supported
        run = subprocess.run([troupe, "launch", "-n", "1", "-s", "1", "--join-timeout", "1", "--",
                              "--config", "/nonexistent/chaos.troupe", "--model-prefix", "/nonexistent/m"],
                             capture_output=True, text=True, timeout=30)
        if "not supported in cluster runs" not in run.stdout + run.stderr:
            found.add("checkpoints")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return found


# ---- the tables ------------------------------------------------------------------------------

# A job configuration: its config, node flags, and the features it needs (else it is never drawn).
# `starter` is how its nodes start: "hand" (the default: each `troupe node` by this script, with
# --rank; a link cut needs it, as each node runs in its namespace) or "launch" (one `troupe
# launch`, with `launch_flags`; its nodes found from its prefixed output and the scheduler's
# join lines).
STOP = ["--on-worker-loss", "stop"]  # a lost worker stops the run (bsp adopts it when not told)
VARIANTS = {
    "bsp-stop": dict(config="chaos_bsp.troupe", flags=STOP, needs=set(), deterministic=True),
    "bsp-launch": dict(config="chaos_bsp.troupe", flags=STOP, needs=set(), deterministic=True, starter="launch"),
    "async-continue": dict(config="chaos_async.troupe", flags=["--on-worker-loss", "continue"], needs=set(),
                           deterministic=False),
    "bsp-backups": dict(config="chaos_bsp.troupe", flags=["--shard-backups", "1"] + STOP, needs={"backups"},
                         deterministic=True, backups=True),
    "bsp-adopt": dict(config="chaos_bsp.troupe", flags=["--on-worker-loss", "adopt"], needs={"adopt"},
                      deterministic=True),
    "async-adopt": dict(config="chaos_async.troupe", flags=["--on-worker-loss", "adopt"], needs={"adopt-any"},
                        deterministic=False),
    "hierarchical-adopt": dict(config="chaos_hierarchical.troupe", flags=["--on-worker-loss", "adopt"],
                               needs={"adopt-any"}, deterministic=True),
    "local_sync-adopt": dict(config="chaos_local_sync.troupe", flags=["--on-worker-loss", "adopt"],
                             needs={"adopt-any"}, deterministic=False),
    # A third worker process joins once training (`joiner`): it takes one of the busiest worker's
    # two computes at the next gate; then the fault.
    "bsp-join": dict(config="chaos_bsp_ranks.troupe", flags=["--on-worker-loss", "adopt"],
                     needs={"adopt", "rank-moves"}, deterministic=True, joiner=True),
    "bsp-spare": dict(config="chaos_bsp.troupe", flags=["--on-worker-loss", "adopt"], needs={"spares", "adopt"},
                      deterministic=True, starter="launch", launch_flags=["--spares", "1"]),
    # Jobs that save every epoch under the trial's folder (`saves`): with one restart, run by
    # scripts/chaos_restarts.py (the `resume` moment takes two); with none, a loss still stops them.
    "bsp-restarts": dict(config="chaos_bsp.troupe", flags=["--save-period", "1"] + STOP, needs={"max-restarts", "checkpoints"},
                         deterministic=True, starter="launch", restarts=1, saves=True),
    "bsp-no-restarts": dict(config="chaos_bsp.troupe", flags=["--save-period", "1"] + STOP,
                            needs={"max-restarts", "checkpoints"}, deterministic=True, starter="launch",
                            launch_flags=["--max-restarts", "0"], saves=True),
}
# The variants where a lost worker's nodes are adopted.
ADOPTING = ("bsp-adopt", "bsp-spare", "bsp-join", "async-adopt", "hierarchical-adopt", "local_sync-adopt")
# Variant names scripts may still give: bsp-replicas is bsp-backups under the old word.
OLD_VARIANT_NAMES = {"bsp-replicas": "bsp-backups"}

EPOCHS = 3  # the chaos configs' epochs


def role_of(node):
    return node.split("_")[0]


# Moments: (name, needs, picks its parameter from the rng). The trigger and the check of where
# the fault landed are in moment_trigger / moment_landed below.
MOMENTS = {
    "join": set(),
    "mid-epoch": set(),
    "validation": set(),
    "boundary": set(),
    "ending": set(),
    "checkpoint": {"checkpoints"},   # while a checkpoint is written (the save line names it)
    "promotion": {"backups"},       # a server lost first, the victim while its backup is promoted
    "resume": {"max-restarts", "checkpoints"},  # the restarted job's restore (chaos_restarts.py)
}

TRAINING = ("mid-epoch", "validation", "boundary")  # moments a run in training survives a loss at

WAYS = ["none", "kill", "stop", "thaw", "cut", "all"]  # all: every process of the job killed (restarts only)

# The compressions a variant's job is drawn with (--compression; none where the table has none).
COMPRESSIONS = {
    "bsp-stop": ["none", "fp16", "2bit:fit"],
    "bsp-launch": ["none", "fp16", "2bit:fit"],
    "bsp-backups": ["none", "fp16", "2bit:fit", "push:fp16", "push:2bit:fit"],
    "async-continue": ["none", "push:fp16"],  # (no barrier answers its sources alike)
}
ALL_COMPRESSIONS = ["none", "fp16", "2bit:fit", "push:fp16", "push:2bit:fit"]
FENCED_EXIT = 3  # troupe node's exit status once fenced


def survives(variant, victim):
    """Whether the variant's run goes on after losing `victim` in training: a worker where workers
    are adopted, a server where shards have backups."""
    return (role_of(victim) == "worker" and variant in ADOPTING) or (
        role_of(victim) == "server" and bool(VARIANTS[variant].get("backups")))


def fits(variant, way=None, moment=None, victim=None):
    """Whether a way or moment can be drawn for a variant: a link cut needs nodes by hand, the
    loss of every process a job that restarts, a checkpoint moment one that saves, a resume one
    that restarts."""
    v = VARIANTS[variant]
    if way == "thaw":  # (fenced once its part moved: a victim the run goes on without)
        return victim is not None and survives(variant, victim) and not v.get("restarts")
    if way == "cut":  # (a joiner has no namespace of its own)
        return v.get("starter") != "launch" and not v.get("joiner")
    if way == "all":
        return bool(v.get("restarts"))
    if moment == "checkpoint":
        return bool(v.get("saves"))
    if moment == "promotion":
        return bool(v.get("backups"))
    if moment == "resume":
        return bool(v.get("restarts"))
    return True

# The expected outcome: the first row whose test holds. A row: (why, test(trial), outcome).
EXPECT = [
    ("nothing lost", lambda t: t["way"] == "none", "finishes"),
    ("the job restarts from its last whole checkpoint (the launcher says so)",
     lambda t: VARIANTS[t["variant"]].get("restarts"), "finishes"),
    # (launch starts a killed scheduler again with --resume; the members, training on, rejoin it;
    # killed as the nodes join, they join the restarted one and the run starts afresh; killed in
    # the last validation, it may be lost as it ends the run: the next row)
    ("a killed scheduler is started again by launch", lambda t: t.get("scheduler_restart")
     and t["victim"] == "scheduler" and t["way"] == "kill" and VARIANTS[t["variant"]].get("starter") == "launch"
     and t["moment"] in TRAINING + ("checkpoint", "join") and not last_validation(t), "finishes"),
    # (the last epoch's validation is the run's end too: a fault that lands a moment late, a
    # SIGSTOP as the last validation line is written, finds the run finished)
    ("the run ends as it is lost", lambda t: t["moment"] == "ending" or last_validation(t), "finishes-or-stops"),
    # (a server lost first, the victim during or right after the promotion: a second loss)
    ("a loss during a promotion stops the run", lambda t: t["moment"] == "promotion", "stops"),
    ("a lost worker is adopted once training", lambda t: role_of(t["victim"]) == "worker"
     and t["variant"] in ADOPTING and t["moment"] in TRAINING, "finishes"),
    ("a lost server's shards are promoted once training", lambda t: role_of(t["victim"]) == "server"
     and t["variant"] == "bsp-backups" and t["moment"] in TRAINING, "finishes"),
    ("async goes on without a lost worker once training",
     lambda t: t["variant"] == "async-continue" and role_of(t["victim"]) == "worker"
     and t["moment"] in ("mid-epoch", "validation", "boundary"), "goes-on"),
    ("any other loss stops the run, naming the node", lambda t: True, "stops"),
]


def last_validation(trial):
    return trial["moment"] == "validation" and trial["epoch"] == EPOCHS - 1


def expected(trial):
    for why, test, outcome in EXPECT:
        if test(trial):
            return outcome, why
    raise AssertionError("EXPECT has a catch-all row")


# ---- one trial -------------------------------------------------------------------------------

def draw(seed, k, allowed, have):
    """Trial k of seed: every choice from its own RNG, so it replays alone."""
    rng = random.Random(f"{seed}:{k}")
    variants = [v for v in allowed["variants"] if VARIANTS[v]["needs"] <= have]
    variant = rng.choice(variants)
    victim = rng.choice([n for n in NODES if role_of(n) in allowed["roles"]])
    ways = [w for w in allowed["ways"] if fits(variant, way=w, victim=victim)] or ["none"]
    way = rng.choices(ways, weights=[1 if w == "none" else 3 for w in ways])[0]
    moments = [m for m in allowed["moments"] if MOMENTS[m] <= have and fits(variant, moment=m)]
    moment = rng.choice(moments)
    epoch = rng.randrange(EPOCHS - 1 if moment == "boundary" else EPOCHS)
    batch = 4 * rng.randrange(1, 23)  # 96 batches per worker and epoch; a line every 4
    trial = dict(seed=seed, trial=k, variant=variant, victim=victim, way=way, moment=moment, epoch=epoch,
                 batch=batch, scheduler_restart="scheduler-restart" in have)
    if moment == "promotion":  # the server SIGKILLed first, at the batch: not the victim
        trial["first"] = "server_1" if victim == "server_0" else "server_0"
    compressions = [c for c in COMPRESSIONS.get(variant, ["none"]) if c in allowed["compressions"]] or ["none"]
    trial["compression"] = random.Random(f"{seed}:{k}:compression").choice(compressions)
    return trial


def moment_trigger(trial):
    """(node, event, fields): the fault fires once that node has recorded the event with those
    fields (node_records)."""
    m, k, victim = trial["moment"], trial["epoch"], trial["victim"]
    if m == "join":
        return ("scheduler", "admitted", {}) if victim == "scheduler" else (
            "scheduler", "admitted", {"member": victim})
    if m == "mid-epoch":
        return "scheduler", "batch", {"epoch": k, "batch": trial["batch"]}
    if m == "validation":
        return "scheduler", "trained", {"epoch": k}
    if m == "boundary":
        return "scheduler", "validated", {"epoch": k}
    if m == "ending":
        return "scheduler", "validated", {"epoch": EPOCHS - 1}
    if m == "checkpoint":
        return "scheduler", "saving", {"epoch": k + 1}
    if m == "promotion":  # (after the first loss: kill_first)
        return "scheduler", "promotion", {}
    raise AssertionError(m)


def moment_landed(trial, has):
    """Whether the scheduler's records at the fault say the run was still where the moment
    means; has(event, **fields): whether the scheduler has recorded that."""
    m, k = trial["moment"], trial["epoch"]
    if m == "join":
        return not has("assembled")
    if m == "mid-epoch":
        return not has("trained", epoch=k)
    if m == "validation":
        return not has("validated", epoch=k)
    if m == "boundary":
        return not has("batch", epoch=k + 1)  # (the first batch record of the next epoch)
    if m == "ending":
        return not has("ended")
    if m == "checkpoint":
        return not has("saved", epoch=k + 1)
    if m == "promotion":  # the backups not yet serving (later: the second loss came after it)
        return not has("promoted")
    return True


class Trial(cluster_run.Cluster):
    """The processes of one trial, by plan name; with a Net, each in its own namespace."""

    def __init__(self, troupe, workdir, net=None):
        super().__init__(troupe, workdir)
        self.net = net
        self.records = node_records.Folder(os.path.join(workdir, "events"))
        os.makedirs(self.records.folder, exist_ok=True)

    def start(self, name, args, **kwargs):
        return super().start(name, args + ["--events", self.records.path(name)], **kwargs)

    def reason(self, name):
        """The error node `name` ended with (its `ended` record), or None."""
        ended = self.records.last(name, "ended")
        return ended.get("reason") or None if ended else None

    def launcher(self, name):
        return ["ip", "netns", "exec", self.net.ns[name]] if self.net else []

    def sessions_left(self):
        """Processes still in one of this trial's sessions (each node leads its own)."""
        ours = {p.pid for p in self.procs.values()}
        left = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z" and int(fields[3]) in ours:
                left.append(int(entry))
        return left


class LaunchedNode:
    """A node `troupe launch` started, as far as Trial's users need a Popen: pid, poll, wait."""

    def __init__(self, owner, name):
        self.owner, self.name, self.returncode = owner, name, None

    @property
    def pid(self):
        return self.owner.pid_of(self.name)

    def poll(self):
        if self.returncode is not None:
            return self.returncode
        pid = self.pid
        if pid is not None and cluster_run.alive(pid):
            return None
        if pid is None and self.owner.launch.poll() is None:
            return None  # not started yet, or not yet known
        self.returncode = self.owner.exit_code(self.name)
        return self.returncode

    def wait(self, timeout):
        deadline = time.time() + timeout
        while self.poll() is None:
            if time.time() > deadline:
                raise subprocess.TimeoutExpired(self.name, timeout)
            time.sleep(POLL_S)
        return self.returncode


class LaunchTrial:
    """One `troupe launch --events` of the trial's job: its nodes' pids and exit statuses from
    launch's records, their moments and errors from their own (its output, for people, in
    launch.out)."""

    def __init__(self, troupe, workdir):
        self.troupe, self.workdir, self.launch = troupe, workdir, None
        self.procs = {name: LaunchedNode(self, name) for name in NODES}
        self.records = node_records.Folder(os.path.join(workdir, "events"))

    def start(self, variant, config, common):
        command = [self.troupe, "launch", "-n", str(WORKERS), "-s", str(SERVERS), "--join-timeout", JOIN_TIMEOUT,
                   "--grace", "5", "--events", self.records.folder] + variant.get("launch_flags", []) + ["--"] + common
        self.launch = child_process.start(command, out=os.path.join(self.workdir, "launch.out"),
                                          err=subprocess.STDOUT, cwd=self.workdir)

    def all_text(self):
        with open(os.path.join(self.workdir, "launch.out"), errors="replace") as f:
            return f.read()

    def reason(self, name):
        ended = self.records.last(name, "ended")
        return ended.get("reason") or None if ended else None

    def pid_of(self, name):
        """The pid launch first started node `name` with (the one a trial faults; a scheduler
        started again has another)."""
        spawned = self.records.first("launch", "spawned", name=name)
        return spawned["child_pid"] if spawned else None

    def exit_code(self, name):
        """From launch's `exited` record of it (-signal when a signal killed it); waits a moment
        for the record, written as launch reaps it."""
        deadline = time.time() + 1
        while True:
            pid = self.pid_of(name)
            found = self.records.last("launch", "exited", name=name, child_pid=pid)
            if found:
                return found["code"] if found["signal"] == 0 else -found["signal"]
            if self.launch.poll() is not None or time.time() > deadline:
                return 0
            time.sleep(POLL_S)

    def sessions_left(self):
        gone = [] if self.launch.poll() is not None else [self.launch.pid]
        nodes = [p for p in (self.pid_of(n) for n in NODES) if p is not None and cluster_run.alive(p)]
        return gone + nodes + [p for p in cluster_run.descendants(self.launch.pid) if p not in nodes]

    def kill_all(self):
        cluster_run.kill_group(self.launch.pid)
        for pid in [r["child_pid"] for r in self.records.all("launch", "spawned")]:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        try:
            self.launch.wait(10)
        except subprocess.TimeoutExpired:
            return [f"troupe launch (pid {self.launch.pid})"]
        return []


def signal_node(pid, sig):
    """Signals a node's group (or the node alone); a node gone already is left be: under
    launch, a stopped victim is killed by the launcher once its grace is over."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def scheduler_wait_flags():
    """How long a member waits for a restarted scheduler, where the binary has one."""
    return ["--scheduler-timeout", SCHEDULER_TIMEOUT] if "scheduler-restart" in FEATURES else []


def launch_node_flags(config, variant):
    return ["--config", config, "--heartbeat", HEARTBEAT, "--peer-timeout", PEER_TIMEOUT,
            "--num-epochs", str(EPOCHS)] + scheduler_wait_flags() + variant["flags"]


def start_nodes(t, variant, config, net):
    if isinstance(t, LaunchTrial):
        saving = ["--model-prefix", chaos_restarts.prefix_of(t.workdir)] if variant.get("saves") else []
        if saving:
            os.makedirs(os.path.dirname(saving[1]), exist_ok=True)
        t.start(variant, config, launch_node_flags(config, variant) + saving)
        return None
    common = ["--config", config, "--server-nodes", str(SERVERS), "--worker-nodes", str(WORKERS),
              "--heartbeat", HEARTBEAT, "--peer-timeout", PEER_TIMEOUT, "--join-timeout", JOIN_TIMEOUT,
              "--num-epochs", str(EPOCHS)] + scheduler_wait_flags() + variant["flags"]
    host = net.addr["scheduler"] if net else "127.0.0.1"
    port_file = os.path.join(t.workdir, "scheduler.port")
    t.start("scheduler", ["--role", "scheduler", "--scheduler", f"{host}:0", "--port-file", port_file] + common)
    deadline = time.time() + START_BOUND_S
    while not (os.path.exists(port_file) and open(port_file).read().strip()):
        if t.procs["scheduler"].poll() is not None or time.time() > deadline:
            return "the scheduler ended or wrote no port file before it listened"
        time.sleep(POLL_S)
    at = ["--scheduler", f"{host}:{int(open(port_file).read())}"]
    for name in NODES[1:]:
        role, rank = name.split("_")
        where = []
        if net:
            where = ["--listen", net.addr[name]] if role == "server" else ["--advertise", net.addr[name]]
        t.start(name, ["--role", role, "--rank", rank] + where + at + common)
    return None


def start_joiner(t, variant, config):
    """A worker process started in training with no rank: it joins as a spare and takes computes."""
    common = ["--config", config, "--server-nodes", str(SERVERS), "--worker-nodes", str(WORKERS),
              "--heartbeat", HEARTBEAT, "--peer-timeout", PEER_TIMEOUT, "--join-timeout", JOIN_TIMEOUT,
              "--num-epochs", str(EPOCHS)] + scheduler_wait_flags() + variant["flags"]
    port = int(open(os.path.join(t.workdir, "scheduler.port")).read())
    t.start("joiner", ["--role", "worker", "--scheduler", f"127.0.0.1:{port}"] + common)


def wait_exits(t, names, since, deadline, codes):
    """Waits until each of `names` has exited or the deadline; returns the seconds from `since`
    at which each was seen gone (polled, so every exit is timed, not only the last)."""
    exits = {}
    while time.time() < deadline:
        for name in names:
            if name not in exits and t.procs[name].poll() is not None:
                codes[name] = t.procs[name].returncode
                exits[name] = round(time.time() - since, 2)
        if len(exits) == len(names):
            break
        time.sleep(POLL_S)
    return exits




def names_victim(line, victim, pid):
    if line is None:
        return False
    if victim == "scheduler":
        return "the scheduler" in line
    role, index = victim.split("_")
    return victim in line or re.search(rf"\b{role} {index} \(pid {pid}\b", line) is not None


def check(trial, outcome, t, pids, codes, reference):
    """Problems with the trial's outcome against the expected one ([] when it is as it should be)."""
    victim, way = trial["victim"], trial["way"]
    ended = t.records.last("scheduler", "ended")
    final = ended.get("weights") if ended else None  # the scheduler's final weights line
    problems = []

    def admitted(name, pid):  # the scheduler let it in (it joined, or rejoined a restarted one)
        return any(t.records.has("scheduler", event, member=name, member_pid=pid) for event in ("admitted", "rejoined"))

    def finished():  # (a victim killed as the run ended need not have exited 0)
        bad = {n: c for n, c in codes.items() if c != 0 and (n != victim or way == "none")}
        if bad:
            return [f"exit statuses {bad}, expected 0"]
        fenced = t.records.has("scheduler", "fenced", member=victim)
        if way == "thaw" and fenced and codes.get(victim) != FENCED_EXIT:
            # continued after its part moved, it must end by itself, fenced (node_fences.hpp); one
            # the scheduler never fenced (the run ended first) may have heard the end
            return [f"the thawed {victim} exited {codes.get(victim)}, not {FENCED_EXIT} (fenced): "
                    f"{t.reason(victim)}"]
        got = final
        if reference is not None and got != reference:
            return [f"weights {got}, in one process {reference}"]
        return []

    def stopped():
        found = []
        for name, code in codes.items():
            if name == trial.get("first"):  # killed first: its error line says nothing
                continue
            if name == victim:
                if way in ("stop", "cut", "thaw") and code == 0:
                    found.append(f"the {way} victim {name} exited 0")
                continue
            if code == 0:
                found.append(f"{name} exited 0")
                continue
            line = t.reason(name)
            if not admitted(name, pids[name]) and (
                    line is None or
                    re.search(r"no scheduler at \S+ within \d+ s \(--join-timeout\)|"
                              r"lost the scheduler at [\d:.]+ UTC: the connection to scheduler at \S+ closed$|"
                              r"lost the scheduler, and no scheduler came back at \S+ within \d+ s "
                              r"\(--scheduler-timeout\)|"
                              r"asked to leave \(SIGTERM\) while rejoining", line)):
                # it had not joined (not yet connected, or its join not yet read) when the scheduler
                # ended the run: it hears no reason (docs/operations.md, "Chaos runs"), and waits
                # for a restarted scheduler as for a lost one; under launch, still retrying, it is
                # ended by the launcher's SIGTERM, saying nothing or that it was asked to leave
                continue
            if victim == "scheduler":
                # a member may name the server it shared the lost scheduler with (docs/operations.md)
                if line is None or not re.search(r"the scheduler|server_\d", line):
                    found.append(f"{name}'s error line does not say what it lost: {line}")
            elif not names_victim(line, victim, pids[victim]):
                found.append(f"{name}'s error line does not name {victim}: {line}")
        if victim == "scheduler" and not any(names_victim(t.reason(n), victim, 0) for n in codes if n != victim):
            found.append("no node's error line names the scheduler")
        return found

    if outcome == "finishes":
        problems += finished()
    elif outcome == "stops":
        problems += stopped()
    elif outcome == "finishes-or-stops":
        a, b = finished(), stopped()
        if a and b and codes.get("scheduler") == 0 and victim != "scheduler":
            # The scheduler finished (its digest checked), and a node that lost the victim
            # before it heard so says what it lost: the fault came as the run ended.
            a = [p for p in finished() if not p.startswith("exit statuses")]
            for name, code in codes.items():
                if name not in ("scheduler", victim) and code != 0 and not names_victim(
                        t.reason(name), victim, pids[victim]):
                    a.append(f"{name} exited {code} without naming {victim}")
        elif a and b and victim == "scheduler":
            # The scheduler lost as it ended the run: it tells the workers first, the servers once
            # the workers are gone, so some may have heard the end (exit 0) and the others lost
            # it (naming it); the weights, if it printed them, are the run's.
            a = []
            got = final
            if got and reference is not None and got != reference:
                a.append(f"weights {got}, in one process {reference}")
            for name, code in codes.items():
                if name != "scheduler" and code != 0 and not names_victim(t.reason(name), victim, 0):
                    a.append(f"{name} exited {code} without naming the scheduler")
        if a and b:
            problems += [f"neither finished ({'; '.join(a)}) nor stopped ({'; '.join(b)})"]
    elif outcome == "goes-on":
        others = {n: c for n, c in codes.items() if n != victim and c != 0}
        if others:
            problems.append(f"exit statuses {others}, expected 0 (the run goes on)")
        if not t.records.has("scheduler", "dropped", member=victim):
            problems.append("the scheduler does not say the run goes on without the lost worker")
    return problems


def kill_first(t, trial):
    """The promotion moment's first loss: SIGKILLs trial["first"] (a server) at the trial's
    batch line; a problem text when that moment never came."""
    at = dict(epoch=trial["epoch"], batch=trial["batch"])
    deadline = time.time() + START_BOUND_S
    while not t.records.has("scheduler", "batch", **at):
        ended = [n for n, p in t.procs.items() if p.poll() is not None]
        if ended:
            return f"{', '.join(ended)} ended before the first loss (the scheduler's batch {at})"
        if time.time() > deadline:
            return f"no batch {at} in the scheduler's records within {START_BOUND_S} s"
        time.sleep(POLL_S)
    first = t.procs[trial["first"]]
    if first.pid is None:
        return f"no pid for {trial['first']} at the first loss"
    signal_node(first.pid, signal.SIGKILL)
    return None


def with_compression(variant, trial):
    """The variant's table entry with the trial's compression among its flags."""
    c = trial.get("compression", "none")
    return variant if c == "none" else dict(variant, flags=variant["flags"] + ["--compression", c])


def reference_name(trial):
    c = trial.get("compression", "none")
    return trial["variant"] if c == "none" else f"{trial['variant']}+{c}"


def thaw_when_fenced(t, trial, victim, fault_at):
    """The thaw way: the stopped victim is continued once the scheduler has fenced it (its
    `fenced` record); a problem text when that never came while the others ran."""
    deadline = fault_at + DETECT_BOUND_S
    while not t.records.has("scheduler", "fenced", member=trial["victim"]):
        if t.procs["scheduler"].poll() is not None or time.time() > deadline:
            signal_node(victim.pid, signal.SIGCONT)
            return None if t.procs["scheduler"].poll() is not None else (
                f"the scheduler recorded no fence of {trial['victim']} within {DETECT_BOUND_S} s")
        time.sleep(POLL_S)
    signal_node(victim.pid, signal.SIGCONT)
    return None


def run_trial(troupe, trial, references, keep):
    variant = with_compression(VARIANTS[trial["variant"]], trial)
    config = os.path.join(CONFIGS, variant["config"])
    outcome, why = expected(trial)
    result = dict(trial, expected=outcome, why=why, problems=[], landed=None, seconds=None)
    if trial["way"] == "cut":
        if os.geteuid() != 0:
            result["status"] = "skip"
            result["problems"] = [f"a link cut needs network namespaces, so root (euid {os.geteuid()})"]
            return result
        if not shutil.which("ip"):
            result["status"] = "skip"
            result["problems"] = ["a link cut needs `ip` (iproute2)"]
            return result
    workdir = tempfile.mkdtemp(prefix=f"troupe-chaos-{trial['seed']}-{trial['trial']}-")
    if variant.get("restarts"):
        try:
            chaos_restarts.run_restart_trial(troupe, trial, variant, config, launch_node_flags(config, variant),
                                             references(reference_name(trial), config, variant), workdir,
                                             sys.modules[__name__], result)
        finally:
            result.setdefault("status", "fail" if result["problems"] else "pass")
            result["workdir"] = workdir
            if result["status"] == "pass" and not keep:
                shutil.rmtree(workdir, ignore_errors=True)
        return result
    net = None
    t = None
    problems = result["problems"]
    try:
        if trial["way"] == "cut":
            net = cluster_netns.Net(NODES)
            try:
                net.create()
            except SystemExit as e:  # cluster_netns skips (77) where namespaces cannot be made
                result["status"] = "skip"
                problems.append(f"no network namespaces here (cluster_netns exited {e.code})")
                return result
        t = LaunchTrial(troupe, workdir) if variant.get("starter") == "launch" else Trial(troupe, workdir, net)
        failed_start = start_nodes(t, variant, config, net)
        if failed_start:
            problems.append(failed_start)
            return result
        pids = {n: p.pid for n, p in t.procs.items()}  # (under launch: those known yet)
        codes = {}
        if trial["way"] == "none":
            fault_at = time.time()
            deadline = fault_at + RUN_BOUND_S
            for name, p in t.procs.items():
                try:
                    codes[name] = p.wait(max(0.1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    problems.append(f"{name} still runs after {RUN_BOUND_S} s (a hang)")
            result["landed"] = True
        else:
            first = trial.get("first")
            if first:  # the promotion moment: a server lost first, at the batch
                problem = kill_first(t, trial)
                if problem:
                    problems.append(problem)
                    return result
            node, event, fields = moment_trigger(trial)
            deadline = time.time() + START_BOUND_S
            joining = variant.get("joiner")  # started once the scheduler records a batch
            while not t.records.has(node, event, **fields):
                if joining and t.records.has("scheduler", "batch", epoch=0):
                    start_joiner(t, variant, config)
                    pids["joiner"] = t.procs["joiner"].pid
                    joining = False
                ended = [n for n, p in t.procs.items() if p.poll() is not None and n != first]
                if ended:
                    problems.append(f"{', '.join(ended)} ended before the moment ({node}'s {event} {fields})")
                    return result
                if time.time() > deadline:
                    problems.append(f"no {event} {fields} in {node}'s records within {START_BOUND_S} s")
                    return result
                time.sleep(POLL_S)
            victim = t.procs[trial["victim"]]
            if victim.pid is None:
                problems.append(f"no pid for {trial['victim']} at the moment")
                return result
            fault_at = time.time()
            if trial["way"] == "kill":
                signal_node(victim.pid, signal.SIGKILL)
            elif trial["way"] in ("stop", "thaw"):
                signal_node(victim.pid, signal.SIGSTOP)
            else:
                cluster_netns.ip_ok("link", "set", net.outer[trial["victim"]], "down")
            result["landed"] = moment_landed(trial, lambda event, **f: t.records.has("scheduler", event, **f))
            if trial["way"] == "thaw":
                problem = thaw_when_fenced(t, trial, victim, fault_at)
                if problem:
                    problems.append(problem)
            # a stopped or cut-off victim is waited for below; a thawed one runs again already
            others = [n for n in t.procs if n != trial["victim"] or trial["way"] in ("kill", "thaw")]
            exits = wait_exits(t, others, fault_at, fault_at + DETECT_BOUND_S, codes)
            result["exits"] = exits
            for name in others:
                if name not in codes:
                    problems.append(f"{name} still runs {DETECT_BOUND_S} s after the fault (a hang)")
            result["seconds"] = max(exits.values(), default=0.0)  # detection: the fault to the others gone
            if trial["way"] == "cut":
                try:
                    codes[trial["victim"]] = victim.wait(max(0.1, fault_at + DETECT_BOUND_S + VICTIM_BOUND_S
                                                             - time.time()))
                except subprocess.TimeoutExpired:
                    problems.append(f"the cut-off {trial['victim']} still runs "
                                    f"{DETECT_BOUND_S + VICTIM_BOUND_S} s after the cut")
            if trial["way"] == "stop":
                signal_node(victim.pid, signal.SIGCONT)
                try:
                    codes[trial["victim"]] = victim.wait(VICTIM_BOUND_S)
                except subprocess.TimeoutExpired:
                    problems.append(f"the stopped {trial['victim']}, continued, still runs after {VICTIM_BOUND_S} s")
        if result["seconds"] is None:
            result["seconds"] = round(time.time() - fault_at, 2)
        if isinstance(t, LaunchTrial):  # launch ends with its nodes, with the first failing one's status
            try:
                code = t.launch.wait(max(0.1, fault_at + DETECT_BOUND_S + VICTIM_BOUND_S - time.time()))
                # (a server or worker killed by a signal is the scheduler's to replace: launch
                # exits 0 when the run goes on without it; any other status counts, and a killed
                # scheduler does unless launch started it again: then the restarted one's counts)
                restarted = t.records.has("launch", "restart", name="scheduler")
                # (a scheduler killed and started again as the run ended may find every node
                # gone, the run finished under the killed one: the launch fails then, by the
                # restarted one's join timeout, though every node exited 0)
                ended_under_it = outcome == "finishes-or-stops" and trial["victim"] == "scheduler" and restarted
                # (a stopped victim, continued, ends fenced, exit status 3: the loss it was, to launch)
                if not ended_under_it and (code == 0) != all(c == 0 for n, c in codes.items()
                                      if not (n == trial["victim"] and (c < 0 or c == FENCED_EXIT)
                                              and (n != "scheduler" or restarted))):
                    problems.append(f"troupe launch exited {code} after its nodes exited {codes}")
            except subprocess.TimeoutExpired:
                problems.append("troupe launch still runs after its nodes ended")
            pids = {n: t.pid_of(n) for n in NODES}
        result["codes"] = codes
        if not problems:
            reference = None
            if outcome in ("finishes", "finishes-or-stops") and variant["deterministic"]:
                reference = references(reference_name(trial), config, variant)
            problems += check(dict(trial, landed=result["landed"]), outcome, t, pids, codes, reference)
    finally:
        if isinstance(t, LaunchTrial):
            left = t.sessions_left()
            if left:
                problems.append(f"processes left behind: {left}")
            problems += [f"{p} survives SIGKILL" for p in t.kill_all()]
        elif t is not None:
            left = t.sessions_left()
            if left:
                problems.append(f"processes left behind: {left}")
            for p in t.procs.values():
                cluster_run.kill_group(p.pid)
                try:
                    os.killpg(p.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for p in t.procs.values():
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    problems.append(f"pid {p.pid} survives SIGKILL")
        if net is not None:
            gone = net.destroy()
            if gone:
                problems.append(f"network left behind: {', '.join(gone)}")
        result.setdefault("status", "fail" if problems else "pass")
        result["workdir"] = workdir
        if result["status"] == "pass" and not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return result


def reference_digests(troupe):
    cache = {}

    def get(name, config, variant):
        if name not in cache:
            # the cluster-only flags and their values left out (a save changes no weight)
            flags, given = ["--num-epochs", str(EPOCHS)], list(variant["flags"])
            while given:
                flag, value = given.pop(0), given.pop(0)
                if flag not in ("--shard-backups", "--save-period"):
                    flags += [flag, value]
            workdir = tempfile.mkdtemp(prefix="troupe-chaos-reference-")
            try:
                cache[name] = cluster_run.in_process_weights(troupe, config, flags, workdir)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
        return cache[name]
    return get


def describe(r):
    where = r["moment"]
    if r["moment"] in ("mid-epoch",):
        where += f" {r['epoch']} batch {r['batch']}"
    elif r["moment"] in ("validation", "boundary"):
        where += f" {r['epoch']}"
    elif r["moment"] == "checkpoint":
        where += f" of epoch {r['epoch'] + 1}"
    elif r["moment"] == "resume":
        where += f" of epoch {chaos_restarts.resume_epoch(r, EPOCHS)}"
    landed = "" if r["landed"] in (None, True) else " (late)"
    took = f" {r['seconds']:.1f} s" if r.get("seconds") is not None else ""
    victim = "every process" if r["way"] == "all" else r["victim"]
    what = "nothing lost" if r["way"] == "none" else f"{r['way']} {victim} at {where}{landed}"
    if r.get("restarted_from"):
        took += " from epoch " + ", ".join(str(e) for e in r["restarted_from"])
    if r.get("training_again_s") is not None:
        took += f" (restart line {r['restart_s']:.1f} s, training again {r['training_again_s']:.1f} s)"
    variant = r["variant"] + (f" ({r['compression']})" if r.get("compression", "none") != "none" else "")
    return (f"seed {r['seed']} trial {r['trial']}: {variant} {what}"
            f" -> expected {r['expected']}: {r['status'].upper()}{took}")


def axes_of(r):
    """The axes a trial drew, for the tally: (axis, value)."""
    v = VARIANTS[r["variant"]]
    topology = v["config"].replace("chaos_", "").replace(".troupe", "").replace("_ranks", "")
    return [("variant", r["variant"]), ("topology", topology), ("compression", r.get("compression", "none")),
            ("change", "join" if v.get("joiner") else "restart" if v.get("restarts") else "none"),
            ("backups", "yes" if v.get("backups") else "no"), ("role", role_of(r["victim"])), ("way", r["way"]),
            ("moment", r["moment"] if r["way"] != "none" else "-")]


def tally_by_axis(results):
    """Lines: per axis, each value's trials as passed/failed/skipped."""
    by = {}
    for r in results:
        for axis, value in axes_of(r):
            by.setdefault(axis, {}).setdefault(value, {"pass": 0, "fail": 0, "skip": 0})[r["status"]] += 1
    lines = []
    for axis, values in by.items():
        parts = [f"{value} {n['pass']}/{n['pass'] + n['fail'] + n['skip']}" + (f" ({n['fail']} failed)" if n["fail"] else "")
                 for value, n in sorted(values.items())]
        lines.append(f"chaos: by {axis}: " + ", ".join(parts))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("troupe")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--seed", type=int, default=None, help="default: from the clock (printed)")
    ap.add_argument("--trial", type=int, default=None, help="replay this trial of --seed alone")
    ap.add_argument("--ways", default=",".join(WAYS))
    ap.add_argument("--roles", default="scheduler,server,worker")
    ap.add_argument("--moments", default="join,mid-epoch,validation,boundary,ending,checkpoint,promotion")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--compressions", default=",".join(ALL_COMPRESSIONS),
                    help="the compressions a variant may be drawn with (COMPRESSIONS)")
    ap.add_argument("--keep", action="store_true", help="keep the logs of passing trials too")
    ap.add_argument("--verbose", action="store_true", help="print when each process was gone")
    ap.add_argument("--json", help="write every trial's result here (one JSON object a line)")
    a = ap.parse_args()
    troupe = os.path.abspath(a.troupe)
    seed = a.seed if a.seed is not None else int(time.time()) % 100000
    allowed = dict(ways=a.ways.split(","), roles=a.roles.split(","), moments=a.moments.split(","),
                   variants=[OLD_VARIANT_NAMES.get(v, v) for v in a.variants.split(",")],
                   compressions=a.compressions.split(","))
    for key, known in (("ways", WAYS), ("roles", ["scheduler", "server", "worker"]), ("moments", list(MOMENTS)),
                       ("variants", list(VARIANTS)), ("compressions", ALL_COMPRESSIONS)):
        bad = [x for x in allowed[key] if x not in known]
        if bad:
            raise SystemExit(f"chaos.py: unknown {key} {bad}; known: {', '.join(known)}")
    have = features(troupe) | set()
    FEATURES.update(have)
    print(f"chaos: seed {seed}; {troupe} supports: {', '.join(sorted(have)) or 'none of the recovery features'}")
    for name, v in VARIANTS.items():
        if name in allowed["variants"] and not v["needs"] <= have:
            print(f"chaos: variant {name} not drawn: needs {', '.join(sorted(v['needs'] - have))}")
    if not [v for v in allowed["variants"] if VARIANTS[v]["needs"] <= have]:
        raise SystemExit("chaos.py: no variant this binary supports among --variants")
    for m in allowed["moments"]:
        if not MOMENTS[m] <= have:
            print(f"chaos: moment {m} not drawn: needs {', '.join(sorted(MOMENTS[m] - have))}")
    flags = "".join(f" --{k} {getattr(a, k)}" for k in ("ways", "roles", "moments", "variants", "compressions")
                    if getattr(a, k) != ap.get_default(k))
    trials = [a.trial] if a.trial is not None else range(a.trials)
    references = reference_digests(troupe)
    results = []
    # a SIGTERM (ctest's timeout) tears down as Ctrl-C does: the trial's finally kills its processes
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    for k in trials:
        trial = draw(seed, k, allowed, have)
        r = run_trial(troupe, trial, references, a.keep)
        results.append(r)
        print(describe(r), flush=True)
        for p in r["problems"]:
            print(f"    {p}")
        if r.get("exits") and (r["status"] == "fail" or a.verbose):
            print("    gone after: " + ", ".join(f"{n} {s:.2f} s" for n, s in sorted(r["exits"].items(), key=lambda e: e[1])))
        if r["status"] == "fail":
            print(f"    logs: {r['workdir']}; replay: {sys.argv[0]} {a.troupe} --seed {seed} --trial {k}{flags}")
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(r) + "\n")
    tally = {s: sum(1 for r in results if r["status"] == s) for s in ("pass", "fail", "skip")}
    print(f"chaos: {len(results)} trials: {tally['pass']} passed, {tally['fail']} failed, {tally['skip']} skipped")
    for line in tally_by_axis(results):
        print(line)
    by = {}
    for r in results:
        if r["status"] == "pass" and r["way"] != "none" and r["expected"] == "stops":
            by.setdefault((role_of(r["victim"]), r["way"]), []).append(r["seconds"])
    for (role, way), secs in sorted(by.items()):
        print(f"chaos: {way} {role}: fault to every process gone, median {statistics.median(secs):.2f} s "
              f"over {len(secs)} trial(s)")
    again = [r["training_again_s"] for r in results if r["status"] == "pass" and r.get("training_again_s") is not None]
    if again:
        print(f"chaos: under --max-restarts: fault to training again (detection + restart + resume), median "
              f"{statistics.median(again):.2f} s over {len(again)} trial(s) (min {min(again):.2f}, max {max(again):.2f})")
    if tally["fail"]:
        raise SystemExit(1)
    if tally["skip"] == len(results):
        raise SystemExit(77)


if __name__ == "__main__":
    main()
