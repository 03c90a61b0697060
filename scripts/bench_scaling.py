#!/usr/bin/env python3
"""`troupe bench scaling`: how training throughput scales with workers over an emulated network.

usage: troupe bench scaling --model M --link RATE[,LATENCY] --compute-ms T
                            [--workers 1,2,4,8] [--servers S|equal|colocated] [--batch 32]
                            [--steps 10] [--epochs 3] [--no-priority] [--no-pace]
                            [--compression C] [--computes-per-worker N] [--topology bsp|async]
                            [--epoch-examples E] [--slice-bytes N]
                            [--tcp-congestion auto|system|NAME] [--host-check auto|all|off]
                            [--results FILE] [--commit TEXT]

Every row is one BSP cluster run (scheduler, S servers, W workers: `troupe node`), each node on an
emulated host of its own (scripts/emulated_hosts.py: a network namespace, the link shaped with tc
tbf at RATE both ways), the workers' computes replaced by stand-ins that take T ms per batch and
push gradients of the model's real shapes (`--compute-stand-in-ms`). `--servers equal`: as many
servers as workers, on hosts of their own; a number: that many server hosts; `colocated`: server i
on worker i's host (as many as workers).
`--no-priority`: the channels write pushes and answers in backward's order (cluster.priority =
false), to compare with the default, first layers first (docs/protocol.md, "Priority").
The nodes are told the link's rate (`troupe node --link-mbit`): each paces its channels at an equal
share of it, and with several workers they write each step's pushes in one fixed order, the same on
every worker (docs/protocol.md, "A fixed push order"; one worker writes each push as it comes, by
rank); `--no-pace` leaves that out, to compare.
`--computes-per-worker N`: N stand-in computes (devices) on each worker host, summed on the host
before they push, as MXNet's kvstore sums a machine's GPUs: `hierarchical(machines = W)` under
`--topology bsp` (dist_sync), and under `--topology async` (dist_async) the host's sum pushed
straight to the shards, which answer each host on its own (the local_sync route set of
examples/fashion_local_sync.troupe); with N = 1, async is the `async` preset. A host's bytes per
step are the model's either way.
`--slice-bytes N`: parameters above N bytes travel in slices of at most N (default 512 KiB; see
SLICE_BYTES).
`--tcp-congestion X`: the channels' TCP congestion control (cluster.tcp_congestion; default auto:
cubic where the nodes may set it; docs/operations.md says why), printed in the table's header as
it resolved.
`--epoch-examples E`: also print, per row, the time and the bytes per node of an epoch of E examples
(E / (W * N * batch) steps, rounded up), the measured step scaled, beside the arithmetic.

The physical limit of a parameter-server step, with M the model's bytes and B the link's rate per
direction: every worker pushes M and pulls M (at once: links are full duplex), every server takes in
W*M/S, so a step moves its bytes no faster than floor = max(M/B, W*M/(S*B)) on separate hosts;
colocated, each host sends the other W-1 servers their shares and answers the other W-1 workers from
its own share: floor = 2*M*(W-1)/(W*B). A step cannot take less than max(compute, floor).

Per row it prints: samples/s (W*batch / step), speed-up and efficiency against the one-worker row,
the measured step (median of the epochs after the first, epoch time / steps) beside max(compute,
floor) and their ratio, bytes per worker and per server per step measured (the exact counts in the
scheduler's metrics file) beside the arithmetic (M each way per worker; W*M/S each way per server),
the host machine's CPU use during the timed epochs (all cores, /proc/stat; in parentheses the share
of it the run's own processes took) and the largest peak resident memory of a worker and of a server
(`worker, server RSS MiB`). A row is marked CPU-bound when the host's cores were at least 90% busy:
there the machine, not the emulated network, was the limit. A row below the goal (ratio < 0.9) and
not CPU-bound is run once more on the same hosts with their links unshaped (no tc; latency too), the
nodes not told a rate: the `unshaped step ms` column. If even then its step is longer than
max(compute, floor) / 0.9, the host cannot reach the goal whatever the network does (a thread of a
node, not the whole machine, can be the limit: a reader copying a VGG-16 model at 10 Gbit), and the
row is marked host-bound. The same rows (but one worker beside its only server, whose bytes cross no
link) also get the `raw TCP step ms` column: the step's bytes moved by plain TCP sockets on the same
shaped hosts (scripts/emulated_hosts.py, measure_exchange: every worker sends M/S to and receives
M/S from every server on another host, all at once, one connection per pair, no compute, the median
of RAW_ROUNDS rounds), with the congestion control and pacing the nodes use. Where max(compute, raw)
is longer than max(compute, floor) / 0.9, the emulated network does not carry the goal's bytes even
for plain TCP on this machine (tbf's and the veths' own work, TCP between many flows through one
shaper), and the row is marked TCP-bound; its `ratio to raw` compares Troupe with that plain TCP
step instead. A checked row neither host- nor TCP-bound is run once more at half the pace: the
link's rate halved (its latency doubled) and the stand-in's time doubled, so that max(compute,
floor) doubles with the same bytes and the same messages, and the host has twice the time for the
same work (the `half-pace step ms (ratio)` column, the ratio against twice the bound). If that run
reaches the goal and loses at most half the milliseconds the row lost, what the row lost went with
the pace asked of the host's 2 cores (the kernel's work for every emulated link, the nodes' copies
and sums), not with a fixed cost of a step (a wait of Troupe's would stay) nor with the network's
arithmetic (which the half pace keeps), and the row is marked CPU-bound too. `--host-check all`
reruns every row so, `off` none (default `auto`). The last two lines are `scaling/raw TCP: R`, the
worst max(compute, raw) / step over the rows with a raw step, neither CPU-bound nor host-bound, and
`scaling/floor: R`, the worst ratio max(compute, floor) / step over the rows neither CPU-bound,
host-bound nor TCP-bound.

`--results FILE`: also append one record per row to FILE (docs/results.jsonl:
scripts/results_page.py makes docs/benchmarks.md's tables from it), stamped with the date, the
commit (--commit, else the git commit of the checkout this script is in) and the machine's CPU. A
run with the defaults of --compression, --topology, --computes-per-worker, --slice-bytes,
--tcp-congestion and with priority and pacing on is a figure of the page's scaling table (group
"scaling"); any other is kept as group "scaling-variant", named by what differs.

Needs root (namespaces, tc): refuses otherwise, saying so (exit 77)."""
import argparse
import json
import math
import os
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, HERE)
# The cluster tests' process handling: beside this script in an installed prefix, else the tests' own.
sys.path.append(HERE if os.path.exists(os.path.join(HERE, "cluster_run.py")) else
                os.path.join(os.path.dirname(HERE), "tests", "apps"))
import cluster_run  # noqa: E402  (the node processes: started, logged and killed as the cluster tests do)
import emulated_hosts  # noqa: E402
import results_page  # noqa: E402

# name -> (config's model line, sample shape, classes)
MODELS = {
    "resnet-50": ("resnet(layers = 50)", (3, 224, 224), 1000),
    "vgg-16": ("vgg(layers = 16)", (3, 224, 224), 1000),
    "vgg-16-cifar": ("vgg(layers = 16)", (3, 32, 32), 10),
    "inception-bn": ("inception_bn", (3, 224, 224), 1000),
    "resnet-110": ("resnet(layers = 110)", (3, 32, 32), 10),
    "lenet": ("lenet", (1, 28, 28), 10),
    "mlp": ("mlp", (1, 28, 28), 10),
}
# The bench's slices: 512 KiB, not a config's default 4 MiB. A server answers a slice only once all of it has
# come, so while the largest slice crosses a link the answers lag the pushes by it; the lag is the link's idle
# time at the end of every step (the worker waits for the last answers), and a link's share shrinks as the
# servers grow. ResNet-50, 1 worker, 1 Gbit: 979 ms a step with 4 MiB slices, 919 with 1 MiB; 4 workers and
# servers: 902 ms with 512 KiB against 915 with 1 MiB, VGG-16 the same with both; 256 KiB costs the host more
# than it gains (docs/notes/benchmarks-notebook.md, tenth and eleventh looks).
SLICE_BYTES = 512 << 10
CPU_BOUND = 0.90  # share of the host's cores busy from which a row counts as CPU-bound
GOAL = 0.90  # the ratio max(compute, floor) / step every row not CPU-bound should reach
ROW_BOUND_S = 600  # a row must end within this
RAW_ROUNDS = 5  # rounds of the raw TCP exchange per checked row (the first pays TCP's slow start; the median)


class BenchError(Exception):
    pass


# --- the arithmetic (pure; tests/scripts/bench_scaling_test.py) -------------------------------------------
def floor_seconds(model_bytes, rate_bits, workers, servers, colocated=False):
    """The shortest a step's communication can take (module docstring)."""
    per_s = rate_bits / 8.0
    if colocated:
        return 2.0 * model_bytes * (workers - 1) / (workers * per_s)
    return max(model_bytes / per_s, workers * model_bytes / (servers * per_s))


# Bytes a value takes on the wire in each encoding, against float32 (docs/protocol.md, "Encoding"):
# 2-bit is a quarter byte a value plus a 4-byte scale per block of 256 values.
ENCODING_SHARE = {"none": 1.0, "fp16": 0.5, "bf16": 0.5, "2bit": 1.0 / 16 + 1.0 / 256}


def compression_shares(text):
    """(pushes, answers): the share of float32 bytes each direction moves under --compression TEXT, as
    troupe reads it (none, fp16, bf16, 2bit[:T], 2bit:fit, push:C). Raises ValueError naming what is
    wrong."""
    push_only = text.startswith("push:")
    name, _, threshold = (text[5:] if push_only else text).partition(":")
    if name not in ENCODING_SHARE or (threshold and name != "2bit") or (push_only and name == "none"):
        raise ValueError(f"'{text}': expected none, fp16, bf16, 2bit[:THRESHOLD], 2bit:fit or push:C")
    if threshold and threshold != "fit":
        try:
            if not float(threshold) > 0:
                raise ValueError
        except ValueError:
            raise ValueError(f"'{text}': the 2bit threshold must be a number above 0") from None
    share = ENCODING_SHARE[name]
    return share, (1.0 if push_only else share)


def expected_bytes_per_step(model_bytes, workers, servers):
    """Bytes each way per step that a worker and a server node move: (worker, server). A worker pushes
    and pulls the whole model; a server takes in and answers its share from every worker. Colocated, a
    node moves the same bytes (its host's link carries less: the share for its own host goes through a
    local socket)."""
    return float(model_bytes), workers * model_bytes / servers


def bound_seconds(row):
    """What a row's step cannot go below: max(compute, floor)."""
    return max(row["compute_s"], row["floor_s"])


def cpu_bound(row):
    """Whether the host's cores were at least CPU_BOUND busy (an unmeasured CPU, nan, counts as bound)."""
    return not row["host_cpu"] < CPU_BOUND


def host_bound(row):
    """Whether even with its links unshaped (unshaped_s) the row's step is longer than its bound over the goal."""
    unshaped = row.get("unshaped_s")
    return unshaped is not None and bound_seconds(row) / unshaped < GOAL


def raw_bound_seconds(row):
    """What plain TCP on the row's links allows its step: max(compute, raw_s); None without a raw step."""
    raw = row.get("raw_s")
    return None if raw is None else max(row["compute_s"], raw)


def tcp_bound(row):
    """Whether plain TCP moving the row's bytes on its links (raw_s) takes longer than its bound over the goal."""
    raw_bound = raw_bound_seconds(row)
    return raw_bound is not None and bound_seconds(row) / raw_bound < GOAL


def half_pace_ratio(row):
    """Twice the row's bound over its step at half the pace (half_s); None without that run."""
    half = row.get("half_s")
    return None if half is None else 2 * bound_seconds(row) / half


def pace_bound(row):
    """Whether the row's run at half the pace (half_s: link rate halved, stand-in doubled, so the bound doubles)
    reaches the goal and loses at most half the time the row lost: what the row lost went with the pace asked
    of the host (module docstring)."""
    ratio = half_pace_ratio(row)
    if ratio is None:
        return False
    bound = bound_seconds(row)
    return ratio >= GOAL and row["half_s"] - 2 * bound <= (row["step_s"] - bound) / 2


def judge_rows(rows):
    """Adds speed-up, efficiency, ratio and the CPU-bound, host-bound and TCP-bound marks to each row (dicts
    with workers, samples_s, step_s, compute_s, floor_s, host_cpu and optionally unshaped_s, the step with the
    links unshaped, raw_s, plain TCP's step on the shaped links, and half_s, the step at half the pace); returns
    scaling/floor over rows neither CPU-bound, host-bound nor TCP-bound (None if none). CPU-bound is the host's
    cores at least CPU_BOUND busy (cpu_busy) or the half-pace rule (pace_bound)."""
    base = next((r for r in rows if r["workers"] == 1), None)
    worst = None
    for r in rows:
        r["speedup"] = r["samples_s"] / base["samples_s"] if base else None  # None: no 1-worker row to compare
        r["efficiency"] = r["speedup"] / r["workers"] if base else None
        r["bound_s"] = bound_seconds(r)
        r["ratio"] = r["bound_s"] / r["step_s"]
        r["cpu_busy"] = cpu_bound(r)
        r["pace_bound"] = pace_bound(r)
        r["cpu_bound"] = r["cpu_busy"] or r["pace_bound"]
        r["host_bound"] = host_bound(r)
        r["raw_bound_s"] = raw_bound_seconds(r)
        r["raw_ratio"] = None if r["raw_bound_s"] is None else r["raw_bound_s"] / r["step_s"]
        r["tcp_bound"] = tcp_bound(r)
        r["half_ratio"] = half_pace_ratio(r)
        if not r["cpu_bound"] and not r["host_bound"] and not r["tcp_bound"]:
            worst = r["ratio"] if worst is None else min(worst, r["ratio"])
    return worst


def raw_worst(rows):
    """The worst max(compute, raw) / step over judged rows with a raw TCP step, neither CPU-bound nor host-bound
    (None if none): how near Troupe comes to plain TCP moving the same bytes on the same links, where the
    host left it the chance."""
    ratios = [r["raw_ratio"] for r in rows
              if r.get("raw_ratio") is not None and not r["cpu_bound"] and not r["host_bound"]]
    return min(ratios) if ratios else None


def needs_host_check(row, mode="auto"):
    """Whether a measured row (step_s, compute_s, floor_s, host_cpu) is rerun unshaped (--host-check): under
    auto, rows below the goal and not CPU-bound (an unmeasured CPU counts as bound); all: every row; off: none."""
    if mode != "auto":
        return mode == "all"
    return bound_seconds(row) / row["step_s"] < GOAL and not cpu_bound(row)


def crosses_links(row):
    """Whether any of the row's step bytes cross an emulated link (floor_s > 0). A single worker beside its only
    server moves nothing over the network: plain TCP has no step to compare with there."""
    return row["floor_s"] > 0


def needs_half_pace(row, mode="auto"):
    """Whether a row is run again at half the pace: under auto, a row the host check ran (needs_host_check) that
    neither its unshaped step nor plain TCP explains (host_bound, tcp_bound); all: every row; off: none."""
    if mode != "auto":
        return mode == "all"
    return needs_host_check(row) and not host_bound(row) and not tcp_bound(row)


def half_pace(link):
    """The link at half the pace: half the rate, twice the latency."""
    return emulated_hosts.Link(link.rate_bits / 2, link.latency_ms * 2)


def against_one(value):
    """A speed-up or efficiency as printed: '-' when the run has no one-worker row to compare with."""
    return "-" if value is None else f"{value:.2f}"


def epoch_records(text):
    """The epoch records of a metrics file's text (`troupe node --metrics`: the run's config record first,
    then one JSON object per epoch), in order; a last line still being written is not one yet."""
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("epoch"), int):
            records.append(record)
    return records


def parse_metrics(text):
    """The scheduler's metrics file -> {epoch: training seconds}, {epoch: {node: (rx, tx) bytes}}: the exact
    byte counts the scheduler collected from every node for the epoch (its `traffic` object)."""
    times, traffic = {}, {}
    for r in epoch_records(text):
        times[r["epoch"]] = float(r["time_s"])
        if isinstance(r.get("traffic"), dict):
            traffic[r["epoch"]] = {node: (float(v["rx"]), float(v["tx"])) for node, v in r["traffic"].items()}
    return times, traffic


# --- measuring ---------------------------------------------------------------------------------------------
def epoch_window(polls, epochs):
    """The CPU samples that bound a run's timed epochs, (mark, end), from its polls in time order, each (epoch
    lines the scheduler had printed, sample, whether every node still ran): mark is the first sample once epoch 0
    has ended (its connections warm, its first pulls done), end the first once the last of `epochs` has. What
    follows (the final pull of the weights, the goodbyes) is not training and would dilute the figure. A run
    whose last epoch line never came ends at the last sample taken while every node ran; None where none is."""
    mark = end = fallback = None
    for done, sample, running in polls:
        if mark is None:
            mark = sample if done >= 1 else None
        elif done >= epochs:
            end = sample
            break
        elif running:
            fallback = sample
    return mark, end if end is not None else fallback


def cpu_ticks():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields), idle


def peak_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            m = re.search(r"VmHWM:\s+(\d+) kB", f.read())
        return int(m.group(1)) if m else 0
    except OSError:
        return 0


def process_ticks(pid):
    """utime + stime of a process, in clock ticks (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def model_bytes_of(troupe, config):
    """The float32 bytes of the config's model: the elements of every push group `troupe check --push-groups`
    lists (one line per group, `push_group G shard S node N elements E work W KEY=LEN...`), one server and
    one worker, so every parameter is in exactly one group."""
    run = subprocess.run([troupe, "check", config, "--push-groups"], capture_output=True, text=True, timeout=600)
    elements = [int(m) for m in re.findall(r"^push_group \d+ shard \d+ node \S+ elements (\d+) ", run.stdout, re.M)]
    if run.returncode != 0 or not elements:
        raise BenchError(f"`troupe check --push-groups` could not list the model: {run.stdout[-500:]}{run.stderr[-500:]}")
    return 4 * sum(elements)


def topology_text(topology, hosts, per_host):
    """The config's topology statement for `hosts` worker hosts of `per_host` computes each (module
    docstring): bsp or async, summed per host when a host has several computes."""
    if per_host == 1:
        return topology
    if topology == "bsp":
        return f"hierarchical(machines = {hosts})"
    return (f"dist_async(machines = {hosts}) {{ loader -> compute  compute -> aggregate(machine) -> shard  "
            f"shard -> aggregate(machine) }}")


def write_config(path, args, workers, servers):
    line, shape, classes = MODELS[args.model]
    computes = workers * args.computes_per_worker
    examples = args.batch * computes * args.steps
    with open(path, "w") as f:
        f.write(f"# troupe bench scaling: {args.model}, {workers} worker host(s) of {args.computes_per_worker} "
                f"compute(s), {servers} server(s)\n"
                f"cluster   {{ servers = {servers}  workers = {computes}  server_nodes = {servers}"
                f"  worker_nodes = {workers}{'  priority = false' if args.no_priority else ''}"
                f"  slice_bytes = {args.slice_bytes}  tcp_congestion = {args.tcp_congestion} }}\n"
                f"data      train = synthetic(shape = [{', '.join(map(str, shape))}], classes = {classes}, "
                f"examples = {examples}, batch = {args.batch})\n"
                f"model     {line}\n"
                f"optimizer sgd(lr = 0.001, momentum = 0.9)\n"
                f"schedule  constant(warmup = 0)\n"
                f"topology  {topology_text(args.topology, workers, args.computes_per_worker)}\n"
                f"train     {{ epochs = {args.epochs}  display = 0  threads = 1  eval_every = 0 }}\n")


def pace_flags(args, link):
    """The flags that tell servers and workers the emulated link's rate: they pace their channels at their share of it
    and order each step's pushes by the plan (troupe node --link-mbit). None with --no-pace or an unshaped link."""
    if args.no_pace or not link.rate_bits:
        return []
    return ["--link-mbit", str(max(1, round(link.rate_bits / 1e6)))]


def servers_for(args, workers):
    """The servers of a row of `workers` worker hosts (--servers: a number, equal or colocated)."""
    return workers if args.servers in ("equal", "colocated") else int(args.servers)


def row_hosts(args, workers):
    """A row's emulated hosts: (worker i's host, server i's host), each in rank order. Colocated, server i
    is on worker i's host; else every server has a host of its own."""
    worker_hosts = [f"worker{i}" for i in range(workers)]
    if args.servers == "colocated":
        return worker_hosts, list(worker_hosts)
    return worker_hosts, [f"server{i}" for i in range(servers_for(args, workers))]


def distinct(hosts):
    """`hosts` without repeats, in order: the hosts to create for a layout whose roles may share some."""
    return list(dict.fromkeys(hosts))


class RowNodes(cluster_run.Cluster):
    """A row's `troupe node` processes, started and killed by the cluster tests' own launcher (each in a
    session of its own, NAME.out and NAME.err in the row's folder), each inside its emulated host."""

    def __init__(self, troupe, workdir, net, host_of):
        super().__init__(troupe, workdir)
        self.net, self.host_of = net, host_of

    def launcher(self, name):
        return self.net.command(self.host_of[name], [])

    def tail(self, name, n=1500):
        return "".join(read_text(os.path.join(self.workdir, f"{name}.{s}")) for s in ("out", "err"))[-n:]


def run_row(args, troupe, link, workers, workdir, tag="", compute_ms=None):
    """One row's cluster run; its files are in workdir/w{workers}{tag} (the unshaped rerun: tag '-unshaped').
    The stand-in takes compute_ms per batch (default --compute-ms)."""
    compute_ms = args.compute_ms if compute_ms is None else compute_ms
    colocated = args.servers == "colocated"
    servers = servers_for(args, workers)
    rowdir = os.path.join(workdir, f"w{workers}{tag}")
    os.makedirs(rowdir, exist_ok=True)
    config = os.path.join(rowdir, "row.troupe")
    write_config(config, args, workers, servers)
    worker_hosts, server_hosts = row_hosts(args, workers)
    hosts = distinct(["scheduler"] + worker_hosts + server_hosts)
    secret = os.urandom(16).hex()
    # A peer timeout well above the default 5 s: at 1 Gbit a pull of a big model (VGG-16: 528 MiB, 4.4 s)
    # is one frame, and the heartbeats queue behind it on the same connection.
    common = ["--config", config, "--progress", "off", "--join-timeout", "120", "--request-timeout", "300",
              "--heartbeat", "2", "--peer-timeout", "60", "--compression", args.compression]
    pace = pace_flags(args, link)
    host_of = {"scheduler": "scheduler", **{f"server{i}": h for i, h in enumerate(server_hosts)},
               **{f"worker{i}": h for i, h in enumerate(worker_hosts)}}

    with emulated_hosts.EmulatedHosts(hosts, link) as net:
        nodes = RowNodes(troupe, rowdir, net, host_of)
        try:
            return measure_row(args, nodes, net, workers, servers, server_hosts, colocated, compute_ms,
                               common + pace, secret)
        finally:
            nodes.kill_all()


def measure_row(args, nodes, net, workers, servers, server_hosts, colocated, compute_ms, common, secret):
    """Starts a row's nodes (RowNodes), samples the host's CPU and the nodes' memory until the scheduler ends,
    and reads the row's figures from the scheduler's metrics file."""
    port_file = os.path.join(nodes.workdir, "scheduler.port")
    metrics = os.path.join(nodes.workdir, "metrics.jsonl")
    for stale in (port_file, metrics):  # an earlier run's port would send every node to a closed port
        if os.path.exists(stale):
            os.remove(stale)

    def start(name, argv):
        return nodes.start(name, argv + common, secret=secret)

    sched = start("scheduler", ["--role", "scheduler", "--scheduler", f"{net.addr['scheduler']}:0",
                                "--port-file", port_file, "--metrics", metrics])
    deadline = time.time() + 60
    while not read_text(port_file).strip():
        if sched.poll() is not None or time.time() > deadline:
            raise BenchError(f"the scheduler did not listen: {nodes.tail('scheduler')}")
        time.sleep(0.05)
    at = ["--scheduler", f"{net.addr['scheduler']}:{int(read_text(port_file))}"]
    procs = {}
    for i in range(servers):
        procs[f"server{i}"] = start(f"server{i}", ["--role", "server", "--rank", str(i), "--listen",
                                                   net.addr[server_hosts[i]]] + at)
    for i in range(workers):
        procs[f"worker{i}"] = start(f"worker{i}", ["--role", "worker", "--rank", str(i), "--advertise",
                                                   net.addr[f"worker{i}"], "--compute-stand-in-ms",
                                                   f"{compute_ms:g}"] + at)
    # the host's CPU over the timed epochs (epoch_window), and our nodes' own CPU over the same
    # time (the host's may include other work)
    deadline, polls = time.time() + ROW_BOUND_S, []
    rss = {"worker": 0, "server": 0}  # the largest peak resident KiB of a node of each role
    everyone = list(procs.values()) + [sched]
    while sched.poll() is None:
        if time.time() > deadline:
            raise BenchError(f"{workers} worker(s): the run did not end within {ROW_BOUND_S} s")
        sample = (cpu_ticks(), sum(process_ticks(p.pid) for p in everyone), time.time())
        done = len(epoch_records(read_text(metrics)))
        polls.append((done, sample, all(p.poll() is None for p in everyone)))
        for name, p in procs.items():
            role = name.rstrip("0123456789")
            rss[role] = max(rss[role], peak_rss_kib(p.pid))
        time.sleep(0.1)
    mark, end = epoch_window(polls, args.epochs)
    for name, p in procs.items():
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            raise BenchError(f"{name} still runs 60 s after the scheduler ended")
    failed = {n: p.returncode for n, p in list(procs.items()) + [("scheduler", sched)] if p.returncode}
    if failed:
        raise BenchError(f"{workers} worker(s): exit statuses {failed}; scheduler: {nodes.tail('scheduler')}")
    times, traffic = parse_metrics(read_text(metrics))
    timed = [e for e in sorted(times) if e >= 1]
    if not timed:
        raise BenchError(f"{workers} worker(s): no timed epoch in the scheduler's metrics: {nodes.tail('scheduler')}")
    host_cpu = nodes_cpu = float("nan")  # a run shorter than two samples: unmeasured, counted CPU-bound
    if mark is not None and end is not None and end[2] > mark[2]:
        total, idle = end[0][0] - mark[0][0], end[0][1] - mark[0][1]
        host_cpu = (total - idle) / total if total else float("nan")
        nodes_cpu = (end[1] - mark[1]) / os.sysconf("SC_CLK_TCK") / (end[2] - mark[2]) / (os.cpu_count() or 1)
    step_s = statistics.median(times[e] for e in timed) / args.steps

    def per_step(prefix, which):
        vals = [v[which] for e in timed for n, v in traffic.get(e, {}).items() if n.startswith(prefix)]
        return statistics.mean(vals) / args.steps if vals else float("nan")

    return {"workers": workers, "servers": servers, "colocated": colocated, "step_s": step_s,
            "samples_s": workers * args.computes_per_worker * args.batch / step_s,
            "compute_s": compute_ms / 1000.0,
            "host_cpu": host_cpu, "nodes_cpu": nodes_cpu, "rss_mib": rss["worker"] / 1024.0,
            "server_rss_mib": rss["server"] / 1024.0,
            "worker_tx": per_step("worker", 1), "worker_rx": per_step("worker", 0),
            "server_rx": per_step("server", 0), "server_tx": per_step("server", 1)}


def read(f):
    f.flush()
    with open(f.name) as g:
        return g.read()


def read_text(path):
    """A file's text, empty while it does not exist yet."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def tail(f, n=1500):
    return read(f)[-n:]


def mib(x):
    return f"{x / 2 ** 20:.1f}"


def epoch_steps(examples, workers, per_host, batch):
    """Steps of an epoch of `examples` examples: every compute takes `batch` per step."""
    return math.ceil(examples / (workers * per_host * batch))


def congestion_algorithm(setting):
    """The algorithm the channels set as the nodes resolve `setting` (cluster/tcp_congestion.hpp), tried on a
    socket of this process, which runs the nodes with its own privileges: None for the host's default."""
    if setting == "system":
        return None
    if setting != "auto":
        return setting
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
            return "cubic"
        except OSError:
            return None


def congestion_text(setting):
    """The channels' congestion control as the nodes resolve `setting`, for the table's header."""
    def host_default():
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read().strip()
    if setting == "system":
        return f"system ({host_default()})"
    if setting != "auto":
        return setting
    return "auto (cubic)" if congestion_algorithm(setting) else f"auto (the host's {host_default()}: cubic not allowed)"


def run_raw(args, link, workers, model_bytes):
    """Plain TCP's step for a row (module docstring): the median seconds of RAW_ROUNDS exchanges of the step's
    wire bytes between the row's worker and server hosts, on links shaped as the row's, with the nodes'
    congestion control and pacing."""
    worker_hosts, server_hosts = row_hosts(args, workers)
    wire_bytes = model_bytes * max(args.push_share, args.answer_share)
    try:
        with emulated_hosts.EmulatedHosts(distinct(worker_hosts + server_hosts), link) as net:
            timings = emulated_hosts.measure_exchange(
                net, worker_hosts, server_hosts, int(wire_bytes / len(server_hosts)), RAW_ROUNDS,
                congestion_algorithm(args.tcp_congestion), link.rate_bits if pace_flags(args, link) else 0)
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
        raise BenchError(f"{workers} worker(s): the raw TCP exchange failed: {e}") from None
    return statistics.median(timings)


def print_table(args, link, model_bytes, rows, worst):
    per_host = f", {args.computes_per_worker} computes per worker host" if args.computes_per_worker > 1 else ""
    print(f"model {args.model}: {mib(model_bytes)} MiB; link {link} per direction; stand-in {args.compute_ms:g} ms "
          f"per batch of {args.batch}; servers {args.servers}; topology {args.topology}{per_host}; compression "
          f"{args.compression}; {args.steps} steps per epoch, median of epochs 1..{args.epochs - 1}; slices of at most "
          f"{args.slice_bytes} bytes; priority "
          f"{'off (backward order)' if args.no_priority else 'on (forward order)'}; channels "
          f"{'paced at their share' + ('' if args.no_priority else ', pushes in a fixed order with several workers') if pace_flags(args, link) else 'not paced'}"
          f"; TCP congestion control "
          f"{congestion_text(args.tcp_congestion)}")
    epoch = args.epoch_examples is not None
    print("| workers | servers | samples/s | speed-up | efficiency | step ms | max(compute, floor) ms | ratio | "
          "worker MiB/step tx, rx (expected) | server MiB/step rx, tx (expected) | host CPU (nodes) | "
          "worker, server RSS MiB | "
          "unshaped step ms | raw TCP step ms (ratio to raw) | half-pace step ms (ratio) |"
          + (f" epoch of {args.epoch_examples} s | server GiB/epoch rx + tx (expected) |" if epoch else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if epoch else ""))
    for r in rows:
        w_bytes, s_bytes = expected_bytes_per_step(model_bytes, r["workers"], r["servers"])
        push, answer = args.push_share, args.answer_share
        w_exp = f"{mib(w_bytes * push)}" + ("" if push == answer else f", {mib(w_bytes * answer)}")
        s_exp = f"{mib(s_bytes * push)}" + ("" if push == answer else f", {mib(s_bytes * answer)}")
        mark = " CPU-bound" if r["cpu_busy"] else ""
        unshaped = "-" if r.get("unshaped_s") is None else f"{r['unshaped_s'] * 1e3:.0f}"
        unshaped += " host-bound" if r["host_bound"] else ""
        raw = "-" if r["raw_ratio"] is None else f"{r['raw_s'] * 1e3:.0f} ({r['raw_ratio']:.2f})"
        raw += " TCP-bound" if r["tcp_bound"] else ""
        half = "-" if r["half_ratio"] is None else f"{r['half_s'] * 1e3:.0f} ({r['half_ratio']:.2f})"
        half += " CPU-bound" if r["pace_bound"] else ""
        extra = ""
        if epoch:
            n = epoch_steps(args.epoch_examples, r["workers"], args.computes_per_worker, args.batch)
            extra = (f" {r['step_s'] * n:.0f} | {(r['server_rx'] + r['server_tx']) * n / 2 ** 30:.1f} "
                     f"({s_bytes * (push + answer) * n / 2 ** 30:.1f}) |")
        print(f"| {r['workers']} | {r['servers']}{' colocated' if r['colocated'] else ''} | {r['samples_s']:.1f} | "
              f"{against_one(r['speedup'])} | {against_one(r['efficiency'])} | {r['step_s'] * 1e3:.0f} | "
              f"max({r['compute_s'] * 1e3:.0f}, {r['floor_s'] * 1e3:.0f}) = {r['bound_s'] * 1e3:.0f} | "
              f"{r['ratio']:.2f} | {mib(r['worker_tx'])}, {mib(r['worker_rx'])} ({w_exp}) | "
              f"{mib(r['server_rx'])}, {mib(r['server_tx'])} ({s_exp}) | {r['host_cpu'] * 100:.0f}% ({r['nodes_cpu'] * 100:.0f}%){mark} | "
              f"{r['rss_mib']:.0f}, {r['server_rss_mib']:.0f} | {unshaped} | {raw} | {half} |{extra}")
    print(f"(over every row, CPU-, host- and TCP-bound ones included: {min(r['ratio'] for r in rows):.2f})")
    to_raw = raw_worst(rows)
    print(f"scaling/raw TCP: {to_raw:.2f}" if to_raw is not None
          else "scaling/raw TCP: n/a (no row checked, or every checked row CPU- or host-bound)")
    print(f"scaling/floor: {worst:.2f}" if worst is not None
          else "scaling/floor: n/a (every row CPU-, host- or TCP-bound)")


def variant_text(args):
    """What of the run's flags differs from the defaults the scaling table is measured with, e.g.
    "compression=fp16,no-priority"; empty for none."""
    differs = [f"compression={args.compression}" if args.compression != "none" else "",
               f"topology={args.topology}" if args.topology != "bsp" else "",
               f"computes-per-worker={args.computes_per_worker}" if args.computes_per_worker != 1 else "",
               f"slice-bytes={args.slice_bytes}" if args.slice_bytes != SLICE_BYTES else "",
               f"tcp-congestion={args.tcp_congestion}" if args.tcp_congestion != "auto" else "",
               "no-priority" if args.no_priority else "", "no-pace" if args.no_pace else ""]
    return ",".join(d for d in differs if d)


def result_records(args, rows, command):
    """A results record per judged row (scripts/results_page.py): the ratio max(compute, floor) / step, or
    where the host limited the row, its mark (CPU, host or TCP with the ratio to plain TCP) instead."""
    variant = variant_text(args)
    records = []
    for r in rows:
        mark = "CPU" if r["cpu_bound"] else "host" if r["host_bound"] else "TCP" if r["tcp_bound"] else None
        layout = "colocated" if r["colocated"] else "apart"
        record = {
            "id": f"scaling/{args.model}/{args.link}/{args.compute_ms:g}ms/{args.servers}/{r['workers']}w"
                  + (f"/{variant}" if variant else ""),
            "group": "scaling-variant" if variant else "scaling",
            "figure": f"{args.model}, {args.link}, {args.compute_ms:g} ms stand-in, servers {layout}, "
                      f"{r['workers']} worker(s){', ' + variant if variant else ''}: max(compute, floor) over the step",
            "value": None if mark else round(r["ratio"], 4), "unit": "",
            "model": args.model, "link": args.link, "compute_ms": args.compute_ms, "servers": args.servers,
            "workers": r["workers"], "variant": variant, "mark": mark,
            "step_ms": round(r["step_s"] * 1e3, 1), "bound_ms": round(r["bound_s"] * 1e3, 1),
            "samples_s": round(r["samples_s"], 2), "host_cpu": round(r["host_cpu"], 3),
            "command": command, "source": "troupe bench scaling --results"}
        if mark == "TCP":
            record["raw_ratio"] = round(r["raw_ratio"], 4)
        records.append(record)
    return records


def check_layout(p, args):
    """Reads --workers into args.worker_counts and checks --servers, as a usage error of parser p
    naming the flag (also bench_pslite.py's)."""
    try:
        args.worker_counts = [int(x) for x in args.workers.split(",") if x.strip()]
    except ValueError:
        p.error(f"--workers '{args.workers}': expected numbers, e.g. 1,2,4")
    if not args.worker_counts or min(args.worker_counts) < 1 or max(args.worker_counts) > 64:
        p.error(f"--workers '{args.workers}': each 1 to 64")
    if args.servers not in ("equal", "colocated") and not (args.servers.isdigit() and int(args.servers) >= 1):
        p.error(f"--servers '{args.servers}': a number >= 1, equal or colocated")


def parse_args(argv):
    # The description is the module's text after its title and usage (argparse prints its own usage),
    # the help at most 100 columns wide, as the rest of troupe's help.
    p = argparse.ArgumentParser(prog="troupe bench scaling", description=__doc__.split("\n\n", 2)[2],
                                formatter_class=lambda prog: argparse.RawDescriptionHelpFormatter(
                                    prog, width=min(100, shutil.get_terminal_size().columns)))
    p.add_argument("--troupe", default=None, help=argparse.SUPPRESS)
    p.add_argument("--model", required=True, choices=sorted(MODELS), help="a zoo model")
    p.add_argument("--link", required=True, help="RATE[,LATENCY] of every host's link, e.g. 1gbit or 10gbit")
    p.add_argument("--workers", default="1,2,4", help="worker hosts per row, e.g. 1,2,4,8 (default 1,2,4)")
    p.add_argument("--servers", default="equal", help="server hosts: a number, equal (as many as workers) or "
                   "colocated (one on each worker's host) (default equal)")
    p.add_argument("--compute-ms", type=float, required=True, help="the stand-in's time per batch")
    p.add_argument("--batch", type=int, default=32, help="samples per batch per worker (default 32)")
    p.add_argument("--steps", type=int, default=10, help="steps per epoch (default 10)")
    p.add_argument("--epochs", type=int, default=3, help="epochs per row; the first is not timed (default 3)")
    p.add_argument("--compression", default="none",
                   help="none, fp16, bf16, 2bit[:T], 2bit:fit or push:C, passed to every node (docs/dsl.md, \"Compression\"); "
                        "the floor and the expected bytes count the encoded sizes")
    p.add_argument("--no-priority", action="store_true", help="channels write pushes and answers in backward's "
                   "order, not first layers first (cluster.priority = false)")
    p.add_argument("--no-pace", action="store_true", help="the nodes are not told the link's rate (troupe node "
                   "--link-mbit): channels not paced, pushes by priority alone")
    p.add_argument("--slice-bytes", type=int, default=SLICE_BYTES,
                   help="parameters above this many bytes travel in slices of at most this (cluster.slice_bytes; "
                        f"default {SLICE_BYTES}, 512 KiB: see the module's text)")
    p.add_argument("--tcp-congestion", default="auto",
                   help="TCP congestion control of the channels (cluster.tcp_congestion): auto (default: cubic where it "
                        "may be set), system (the host's default) or an algorithm's name")
    p.add_argument("--computes-per-worker", type=int, default=1,
                   help="stand-in computes (devices) per worker host, summed on the host (default 1)")
    p.add_argument("--topology", default="bsp", choices=("bsp", "async"),
                   help="bsp (dist_sync) or async (dist_async) between worker hosts (default bsp)")
    p.add_argument("--host-check", default="auto", choices=("auto", "all", "off"),
                   help="which rows are rerun with the links unshaped, for the host-bound mark, timed with plain "
                        "TCP on the shaped links, for the TCP-bound mark, and rerun at half the pace, for the "
                        "CPU-bound mark: auto (default: rows below the goal, not CPU-bound; the half pace only "
                        "where neither of the first two explains the row), all, off")
    p.add_argument("--epoch-examples", type=int, default=None,
                   help="also print the time and the server bytes of an epoch of this many examples")
    p.add_argument("--results", default=None, metavar="FILE",
                   help="append a record per row to this results file (docs/results.jsonl)")
    p.add_argument("--commit", default=None,
                   help="the commit the records name (default: the git commit of this script's checkout)")
    args = p.parse_args(argv)
    if args.slice_bytes < 4:
        p.error(f"--slice-bytes {args.slice_bytes}: at least 4 (one float)")
    if not 1 <= args.computes_per_worker <= 16:
        p.error(f"--computes-per-worker {args.computes_per_worker}: 1 to 16")
    if args.epoch_examples is not None and args.epoch_examples < 1:
        p.error(f"--epoch-examples {args.epoch_examples}: at least 1")
    try:
        args.push_share, args.answer_share = compression_shares(args.compression)
    except ValueError as e:
        p.error(f"--compression {e}")
    check_layout(p, args)
    if args.compute_ms <= 0 or args.batch < 1 or args.steps < 1 or args.epochs < 2:
        p.error("--compute-ms must be > 0, --batch and --steps >= 1, --epochs >= 2 (the first is not timed)")
    try:
        args.link_value = emulated_hosts.parse_link(args.link)
    except ValueError as e:
        p.error(f"--link: {e}")
    return args


def command_text(argv):
    """The command as a user types it again: without the executable's path and the results file."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--troupe", "--results", "--commit"):
            skip = True
        elif not a.startswith(("--troupe=", "--results=", "--commit=")):
            out.append(a)
    return "troupe bench scaling " + shlex.join(out)


def main(argv):
    args = parse_args(argv)
    troupe = os.path.abspath(args.troupe or "troupe")
    if os.geteuid() != 0:
        print("troupe bench scaling: needs root: every node runs on an emulated host (a network namespace "
              f"with a tc-shaped link; scripts/emulated_hosts.py); euid is {os.geteuid()}", file=sys.stderr)
        return emulated_hosts.SKIP
    emulated_hosts.need_root()
    workdir = tempfile.mkdtemp(prefix="troupe-bench-scaling-")
    try:
        write_config(os.path.join(workdir, "model.troupe"), args, 1, 1)
        model_bytes = model_bytes_of(troupe, os.path.join(workdir, "model.troupe"))
        rows = []
        for w in args.worker_counts:
            row = run_row(args, troupe, args.link_value, w, workdir)
            # Links are full duplex: the direction with more bytes sets the floor.
            wire_bytes = model_bytes * max(args.push_share, args.answer_share)
            row["floor_s"] = floor_seconds(wire_bytes, args.link_value.rate_bits, w, row["servers"], row["colocated"])
            rows.append(row)
            print(f"# {w} worker(s): step {row['step_s'] * 1e3:.0f} ms, host CPU {row['host_cpu'] * 100:.0f}%",
                  file=sys.stderr, flush=True)
            if args.link_value.rate_bits and needs_host_check(row, args.host_check):
                row["unshaped_s"] = run_row(args, troupe, emulated_hosts.Link(), w, workdir, "-unshaped")["step_s"]
                print(f"# {w} worker(s), links unshaped: step {row['unshaped_s'] * 1e3:.0f} ms", file=sys.stderr,
                      flush=True)
                if crosses_links(row):
                    row["raw_s"] = run_raw(args, args.link_value, w, model_bytes)
                    print(f"# {w} worker(s), raw TCP: step {row['raw_s'] * 1e3:.0f} ms", file=sys.stderr,
                          flush=True)
            if args.link_value.rate_bits and needs_half_pace(row, args.host_check):
                row["half_s"] = run_row(args, troupe, half_pace(args.link_value), w, workdir, "-half",
                                        2 * args.compute_ms)["step_s"]
                print(f"# {w} worker(s), half the pace: step {row['half_s'] * 1e3:.0f} ms", file=sys.stderr,
                      flush=True)
        worst = judge_rows(rows)
        print_table(args, args.link_value, model_bytes, rows, worst)
        if args.results:
            results_page.append_records(args.results, result_records(args, rows, command_text(argv)), args.commit)
    except (BenchError, RuntimeError) as e:
        print(f"troupe bench scaling: {e} (logs in {workdir})", file=sys.stderr)
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
