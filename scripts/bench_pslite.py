#!/usr/bin/env python3
"""ps-lite beside `troupe bench scaling`: the same model's parameter traffic on the same emulated hosts.

usage: bench_pslite.py --model M --link RATE[,LATENCY] --workers 1,2,4 --servers equal|colocated|S
                       --compute-ms T [--rounds 2] [--modes pull[,pushpull]] [--steps 8] [--epochs 3]
                       [--pslite-steps 10] [--pslite-warmup 3] [--requests groups|keys] [--slice-bytes N]
                       [--troupe PATH] [--pslite PATH]

For each round and each worker count W it runs, back to back on emulated hosts of the same layout
(scripts/emulated_hosts.py: a scheduler host, W worker hosts, S server hosts or servers on the
workers' hosts, every link shaped with tc tbf at RATE both ways):
  1. a ps-lite row: scripts/pslite/model_step (built by scripts/pslite/build.sh, outside the project)
     as scheduler, S servers and W workers. Its requests are Troupe's push groups for this model and
     these servers (`troupe check --push-groups`: the same slicing, at the Troupe row's --slice-bytes,
     512 KiB unless given; the same bundling of small keys; each group on the server Troupe's plan puts
     its shard on; each group's share of the stand-in's step, from its layers' work), or with
     --requests keys one request per key (as MXNet pushes); it reports the
     median step after its warm-up (the slowest worker's). --modes: `pull` sends a group's pull once
     its push is answered (MXNet's engine order), `pushpull` one ZPushPull per group (answered with
     the weights, as Troupe's push is); with both, both rows run, in that order;
  2. the matching `troupe bench scaling` row (scripts/bench_scaling.py's run_row: median of the epochs
     after the first, epoch time / steps).
Then a markdown table per worker count: both systems' ms per step (the median over the rounds, each
round's in brackets), max(compute, floor) (bench_scaling.floor_seconds) and each system's ratio of it
to its step, the 1-minute load average when each row started (rows started above 1.5 are contended:
other work shared the cores) and the host CPU busy during the rows.

Needs root (namespaces, tc): exits 77 otherwise, saying so. Every process it starts is killed and
every namespace deleted at the end, also on errors; every wait has a deadline.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_scaling  # noqa: E402
import emulated_hosts  # noqa: E402

CONTENDED_LOAD = 1.5  # a row started above this 1-minute load average shared the cores
PSLITE_PORT = 9091    # the scheduler's port: every emulated host has a port space of its own
ROW_BOUND_S = 600     # a ps-lite row must end within this


class BenchError(Exception):
    pass


# --- pure parts (tests/scripts/bench_pslite_test.py) --------------------------------------------------
def parse_push_groups(text):
    """`troupe check --push-groups` output -> [(server rank, work share, [elements per key])], backward
    order. Raises ValueError naming the line when one is not `push_group G shard S node server_R
    elements N work W NAME=LEN...`, the key lengths do not add up to N, or W is not a share in [0, 1]."""
    groups = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = re.fullmatch(r"push_group (\d+) shard (\d+) node (\S+) elements (\d+) work (\S+)((?: \S+=\d+)+)",
                         line.strip())
        if not m:
            raise ValueError(f"push groups, line {number}: expected 'push_group G shard S node NODE elements N "
                             f"work W NAME=LEN...', got '{line.strip()[:120]}'")
        node = re.fullmatch(r"server_(\d+)", m.group(3))
        if not node:
            raise ValueError(f"push groups, line {number}: shard {m.group(2)} is on node '{m.group(3)}', not on "
                             "a server process (plan with server_nodes set)")
        try:
            work = float(m.group(5))
        except ValueError:
            work = -1.0
        if not 0.0 <= work <= 1.0:
            raise ValueError(f"push groups, line {number}: work '{m.group(5)}' is not a share between 0 and 1")
        lens = [int(x.rsplit("=", 1)[1]) for x in m.group(6).split()]
        if sum(lens) != int(m.group(4)) or min(lens) < 1:
            raise ValueError(f"push groups, line {number}: keys of {sum(lens)} elements in a group of "
                             f"{m.group(4)}")
        if int(m.group(1)) != len(groups):
            raise ValueError(f"push groups, line {number}: group {m.group(1)} where {len(groups)} was next")
        groups.append((int(node.group(1)), work, lens))
    if not groups:
        raise ValueError("push groups: none listed")
    return groups


def plan_text(groups, requests="groups"):
    """The plan model_step reads: `group SERVER WORK LEN...` per request, backward order, WORK the
    request's share of the stand-in's step. requests='keys': every key its own request (in the
    group's order), with its part of the group's share by its elements."""
    lines = ["# ps-lite requests of one worker's step, in the order backward completes them"]
    for server, work, lens in groups:
        if requests == "keys":
            lines += [f"group {server} {work * n / sum(lens):.9g} {n}" for n in lens]
        else:
            lines.append(f"group {server} {work:.9g} " + " ".join(map(str, lens)))
    return "\n".join(lines) + "\n"


def parse_pslite_output(text):
    """The workers' stdout lines -> the slowest worker's median step in seconds, and the elements each
    moved. Raises ValueError when there is no line or the workers disagree on the elements."""
    found = [dict(kv.split("=", 1) for kv in line.split()[1:])
             for line in text.splitlines() if line.startswith("pslite_model_step ")]
    if not found:
        raise ValueError("no `pslite_model_step` line from any worker")
    elements = {int(f["elements"]) for f in found}
    if len(elements) != 1:
        raise ValueError(f"the workers moved different models: {sorted(elements)} elements")
    return max(float(f["step_ms_median"]) for f in found) / 1e3, elements.pop()


def summarize(rows, bound_s):
    """Rounds of one worker count ({"troupe": s, mode: s..., "load": {system: load}}) -> per system
    (Troupe and each ps-lite mode) the median step over the rounds and bound / median (1.0: at the
    bound), and whether any row started contended (1-minute load average above 1.5)."""
    systems = [k for k in rows[0] if k not in ("load", "cpu")]
    out = {"bound_s": bound_s, "contended": any(v > CONTENDED_LOAD for r in rows for v in r["load"].values())}
    for name in systems:
        median = statistics.median(r[name] for r in rows)
        out[name] = (median, bound_s / median)
    return out


def format_row(workers, servers, rows, summary, systems):
    """One table row: per system `median [round / round ...]` and its ratio, then the loads and CPU."""
    cells = [str(workers), servers]
    for name in systems:
        cells.append(f"{summary[name][0] * 1e3:.0f} [{' / '.join(f'{r[name] * 1e3:.0f}' for r in rows)}]")
    cells.append(f"{summary['bound_s'] * 1e3:.0f}")
    cells += [f"{summary[name][1]:.2f}" for name in systems]
    cells.append(", ".join("/".join(f"{r['load'][n]:.1f}" for n in systems) for r in rows)
                 + (" contended" if summary["contended"] else ""))
    cells.append(", ".join("/".join(f"{r['cpu'][n] * 100:.0f}" for n in systems) for r in rows))
    return "| " + " | ".join(cells) + " |"


NAMES = {"troupe": "Troupe", "pull": "ps-lite pull", "pushpull": "ps-lite pushpull"}


def table_head(systems):
    names = [NAMES[n] for n in systems]
    head = (["workers", "servers"] + [f"{n} ms/step [rounds]" for n in names] + ["max(compute, floor) ms"]
            + [f"bound/{n}" for n in names] + ["load at start, " + "/".join(names), "host CPU %, " + "/".join(names)])
    return "| " + " | ".join(head) + " |\n" + "|---" * len(head) + "|"


# --- running ----------------------------------------------------------------------------------------------
def push_groups_of(troupe, config):
    run = subprocess.run([troupe, "check", config, "--push-groups"], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise BenchError(f"`troupe check --push-groups` failed: {run.stdout[-500:]}{run.stderr[-500:]}")
    try:
        return parse_push_groups(run.stdout)
    except ValueError as e:
        raise BenchError(str(e)) from None


def host_busy(before, after):
    total, idle = after[0] - before[0], after[1] - before[1]
    return (total - idle) / total if total else float("nan")


def run_pslite_row(args, plan_path, link, workers, servers, workdir, mode):
    """One ps-lite run on emulated hosts -> (slowest worker's median step s, elements, host CPU busy)."""
    worker_hosts, server_hosts = bench_scaling.row_hosts(args, workers)
    hosts = bench_scaling.distinct(["scheduler"] + worker_hosts + server_hosts)
    argv = [args.pslite, plan_path, f"{args.compute_ms:g}", str(args.pslite_warmup), str(args.pslite_steps),
            str(args.step_timeout), mode]
    outs, logs, procs = {}, {}, {}
    cpu_before = bench_scaling.cpu_ticks()
    with emulated_hosts.EmulatedHosts(hosts, link) as net:
        base = {"DMLC_PS_ROOT_URI": net.addr["scheduler"], "DMLC_PS_ROOT_PORT": str(PSLITE_PORT),
                "DMLC_NUM_SERVER": str(servers), "DMLC_NUM_WORKER": str(workers)}

        def start(host, name, role):
            env = dict(os.environ, **base, DMLC_ROLE=role, DMLC_NODE_HOST=net.addr[host],
                       DMLC_INTERFACE=net.inner[host])
            outs[name] = open(os.path.join(workdir, f"pslite-{mode}-w{workers}-{name}.out"), "w+")
            logs[name] = open(os.path.join(workdir, f"pslite-{mode}-w{workers}-{name}.log"), "w+")
            procs[name] = net.start(host, argv, stdout=outs[name], stderr=logs[name], env=env)

        start("scheduler", "scheduler", "scheduler")
        for i in range(servers):
            start(server_hosts[i], f"server{i}", "server")
        for i in range(workers):
            start(f"worker{i}", f"worker{i}", "worker")
        deadline = time.time() + ROW_BOUND_S
        while any(p.poll() is None for p in procs.values()):
            failed = {n: p.returncode for n, p in procs.items() if p.poll() not in (None, 0)}
            if failed:
                name = sorted(failed)[0]
                raise BenchError(f"ps-lite, {workers} worker(s): {name} exited with {failed[name]}: "
                                 f"{bench_scaling.tail(logs[name], 800)}")
            if time.time() > deadline:
                raise BenchError(f"ps-lite, {workers} worker(s): the run did not end within {ROW_BOUND_S} s")
            time.sleep(0.1)
        failed = {n: p.returncode for n, p in procs.items() if p.returncode}
        if failed:
            name = sorted(failed)[0]
            raise BenchError(f"ps-lite, {workers} worker(s): {name} exited with {failed[name]}: "
                             f"{bench_scaling.tail(logs[name], 800)}")
    busy = host_busy(cpu_before, bench_scaling.cpu_ticks())
    text = "".join(bench_scaling.read(outs[f"worker{i}"]) for i in range(workers))
    try:
        step_s, elements = parse_pslite_output(text)
    except ValueError as e:
        raise BenchError(f"ps-lite, {workers} worker(s): {e}") from None
    return step_s, elements, busy


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench_pslite.py", description=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=sorted(bench_scaling.MODELS), help="a zoo model")
    p.add_argument("--link", required=True, help="RATE[,LATENCY] of every host's link, e.g. 1gbit")
    p.add_argument("--workers", default="1,2,4", help="worker hosts per row (default 1,2,4)")
    p.add_argument("--servers", default="equal", help="equal, colocated or a number (default equal)")
    p.add_argument("--compute-ms", type=float, required=True, help="the stand-in's time per batch, both systems")
    p.add_argument("--rounds", type=int, default=2, help="times each pair of rows runs, interleaved (default 2)")
    p.add_argument("--steps", type=int, default=8, help="Troupe: steps per epoch (default 8)")
    p.add_argument("--epochs", type=int, default=3, help="Troupe: epochs, the first not timed (default 3)")
    p.add_argument("--batch", type=int, default=32, help="Troupe: samples per batch per worker (default 32)")
    p.add_argument("--pslite-steps", type=int, default=10, help="ps-lite: timed steps (default 10)")
    p.add_argument("--pslite-warmup", type=int, default=3, help="ps-lite: steps before the timed ones (default 3)")
    p.add_argument("--modes", default="pull",
                   help="ps-lite rows per round, comma-separated: pull (a group's pull sent once its push is "
                        "answered, MXNet's order) and/or pushpull (one ZPushPull per group) (default pull)")
    p.add_argument("--requests", choices=("groups", "keys"), default="groups",
                   help="ps-lite: one request per Troupe push group (default) or per key (as MXNet)")
    p.add_argument("--slice-bytes", type=int, default=bench_scaling.SLICE_BYTES,
                   help=f"both systems: parameters above this many bytes travel in slices of at most this "
                        f"(default {bench_scaling.SLICE_BYTES})")
    p.add_argument("--tcp-congestion", default="system",
                   help="Troupe's channels' congestion control (cluster.tcp_congestion). Default system: the host's, "
                        "which is all ps-lite's ZMQ sockets can run, so both systems run the same; auto gives "
                        "Troupe its own default (cubic where it may be set)")
    p.add_argument("--step-timeout", type=float, default=120, help="ps-lite: seconds a step may take (default 120)")
    p.add_argument("--troupe", default="troupe", help="the troupe binary (default: troupe on PATH)")
    p.add_argument("--pslite", default="/tmp/pslite-build/model_step",
                   help="model_step built by scripts/pslite/build.sh (default /tmp/pslite-build/model_step)")
    args = p.parse_args(argv)
    bench_scaling.check_layout(p, args)
    args.mode_list = [m for m in args.modes.split(",") if m]
    if not args.mode_list or any(m not in ("pull", "pushpull") for m in args.mode_list) \
            or len(set(args.mode_list)) != len(args.mode_list):
        p.error(f"--modes '{args.modes}': pull and/or pushpull, comma-separated, each once")
    if args.compute_ms <= 0:
        p.error(f"--compute-ms {args.compute_ms:g}: must be > 0")
    for flag, value, low in (("--rounds", args.rounds, 1), ("--steps", args.steps, 1), ("--epochs", args.epochs, 2),
                             ("--batch", args.batch, 1), ("--pslite-steps", args.pslite_steps, 1),
                             ("--pslite-warmup", args.pslite_warmup, 0), ("--step-timeout", args.step_timeout, 1)):
        if value < low:
            p.error(f"{flag} {value:g}: must be >= {low}")
    try:
        args.link_value = emulated_hosts.parse_link(args.link)
    except ValueError as e:
        p.error(f"--link: {e}")
    # the same flags, as `troupe bench scaling` reads them, for its run_row
    args.scaling = bench_scaling.parse_args(
        ["--model", args.model, "--link", args.link, "--workers", args.workers, "--servers", args.servers,
         "--compute-ms", f"{args.compute_ms:g}", "--steps", str(args.steps), "--epochs", str(args.epochs),
         "--batch", str(args.batch), "--slice-bytes", str(args.slice_bytes),
         "--tcp-congestion", args.tcp_congestion])
    return args


def main(argv):
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("bench_pslite.py: needs root: every node runs on an emulated host (a network namespace with a "
              f"tc-shaped link; scripts/emulated_hosts.py); euid is {os.geteuid()}", file=sys.stderr)
        return emulated_hosts.SKIP
    emulated_hosts.need_root()
    import shutil
    troupe = os.path.abspath(shutil.which(args.troupe) or args.troupe)
    for what, path, how in (("--troupe", troupe, "build the troupe target"),
                            ("--pslite", args.pslite, "build it with scripts/pslite/build.sh")):
        if not os.access(path, os.X_OK):
            print(f"bench_pslite.py: {what} {path}: not an executable; {how}", file=sys.stderr)
            return 2
    workdir = tempfile.mkdtemp(prefix="troupe-bench-pslite-")
    try:
        plans, model_bytes = {}, None
        for w in args.worker_counts:
            s = bench_scaling.servers_for(args, w)
            if s in plans:
                continue
            config = os.path.join(workdir, f"s{s}.troupe")
            bench_scaling.write_config(config, args.scaling, w, s)
            groups = push_groups_of(troupe, config)
            plans[s] = os.path.join(workdir, f"s{s}.plan")
            with open(plans[s], "w") as f:
                f.write(plan_text(groups, args.requests))
            model_bytes = 4 * sum(sum(lens) for _, _, lens in groups)
        results = {w: [] for w in args.worker_counts}
        systems = ["troupe"] + args.mode_list
        for rnd in range(args.rounds):
            for w in args.worker_counts:
                s = bench_scaling.servers_for(args, w)
                r = {"load": {}, "cpu": {}}
                for mode in args.mode_list:
                    r["load"][mode] = os.getloadavg()[0]
                    r[mode], elements, r["cpu"][mode] = run_pslite_row(args, plans[s], args.link_value, w, s,
                                                                       workdir, mode)
                    if 4 * elements != model_bytes:
                        raise BenchError(f"ps-lite moved {4 * elements} bytes per step, the model has {model_bytes}")
                r["load"]["troupe"] = os.getloadavg()[0]
                # a directory per round: run_row's port file of an earlier round would be read as this one's
                rounddir = os.path.join(workdir, f"round{rnd + 1}")
                os.makedirs(rounddir, exist_ok=True)
                row = bench_scaling.run_row(args.scaling, troupe, args.link_value, w, rounddir)
                r["troupe"], r["cpu"]["troupe"] = row["step_s"], row["host_cpu"]
                results[w].append(r)
                print(f"# round {rnd + 1}, {w} worker(s): " + ", ".join(
                    f"{NAMES[n]} {r[n] * 1e3:.0f} ms (load {r['load'][n]:.1f})" for n in systems),
                    file=sys.stderr, flush=True)
        print(f"model {args.model}: {bench_scaling.mib(model_bytes)} MiB; link {args.link_value} per direction; "
              f"stand-in {args.compute_ms:g} ms per step; servers {args.servers}; ps-lite requests: "
              f"{args.requests}; {args.rounds} round(s), each ps-lite ({args.modes}) then Troupe; Troupe: median of epochs "
              f"1..{args.epochs - 1} of {args.steps} steps; ps-lite: median of {args.pslite_steps} steps after "
              f"{args.pslite_warmup}")
        print(table_head(systems))
        for w in args.worker_counts:
            s = bench_scaling.servers_for(args, w)
            colocated = args.servers == "colocated"
            bound = max(args.compute_ms / 1e3,
                        bench_scaling.floor_seconds(model_bytes, args.link_value.rate_bits, w, s, colocated))
            print(format_row(w, f"{s}{' colocated' if colocated else ''}", results[w], summarize(results[w], bound),
                             systems))
    except (BenchError, bench_scaling.BenchError, RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"bench_pslite.py: {e} (logs in {workdir})", file=sys.stderr)
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
