#!/usr/bin/env python3
"""Tests of scripts/bench_scaling.py (`troupe bench scaling`).

usage: bench_scaling_test.py arithmetic
       bench_scaling_test.py run TROUPE

  arithmetic  the floor and the bytes expected per step for worked examples (separate and colocated
              servers), the speed-up / efficiency / ratio / CPU-bound / host-bound / TCP-bound judgement,
              which rows are rerun unshaped and at half the pace (CPU-bound by the half-pace rule), the
              ratio to raw TCP, scaling/raw TCP and scaling/floor, the
              reading the scheduler's metrics file, the results records, flag refusals naming the flag, and
              --no-priority's line in the config every node reads, the link's rate told to the nodes (--no-pace)
  run         `troupe bench scaling` with a tiny model (mlp), 1 and 2 workers on emulated 1 Gbit hosts,
              2 short epochs: a table of two rows, `scaling/raw TCP:` and `scaling/floor:` last, every row
              rerun unshaped, timed with raw TCP and rerun at half the pace (--host-check all), marked
              host-bound, TCP-bound and CPU-bound by the rules; the bytes each worker and
              server moved per step equal the arithmetic within the frames' overhead; then 2 hosts of 2
              computes each, async, servers colocated: every compute's samples count and a host pushes
              the model's bytes once per step; nothing of the emulated hosts is left. Skipped (77) without root; without root the bench refuses, saying so
"""
import contextlib
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import bench_scaling as bs  # noqa: E402
import emulated_hosts  # noqa: E402

MIB = 2 ** 20


def mark_fits(bound_ms, shown_ms, marked):
    """Whether a host-bound or TCP-bound mark agrees with bound / step below the goal, for some step the
    table's whole milliseconds (and the bound's tenth) could have rounded from: the mark is judged on the
    unrounded times, so a step within half a millisecond of bound / goal may carry either."""
    ratios = [(bound_ms + db) / (shown_ms + ds) for db in (-0.05, 0.05) for ds in (-0.5, 0.5)]
    below = [r < bs.GOAL for r in ratios]
    return marked in below


def fail(why):
    print(f"FAIL: {why}")
    raise SystemExit(1)


def close(a, b, what):
    if not math.isclose(a, b, rel_tol=1e-9):
        fail(f"{what}: {a} != {b}")


def check_arithmetic():
    # 100 MB over 1 Gbit/s (125 MB/s per direction): a worker's own link needs 0.8 s per step
    close(bs.floor_seconds(100e6, 1e9, 1, 1), 0.8, "1 worker, 1 server")
    close(bs.floor_seconds(100e6, 1e9, 4, 4), 0.8, "4 workers, 4 servers")
    close(bs.floor_seconds(100e6, 1e9, 4, 2), 1.6, "4 workers, 2 servers: the servers' links")
    close(bs.floor_seconds(100e6, 1e9, 2, 4), 0.8, "2 workers, 4 servers: the workers' links")
    close(bs.floor_seconds(100e6, 1e10, 8, 1), 0.64, "8 workers, 1 server at 10 Gbit/s")
    close(bs.floor_seconds(100e6, 1e9, 1, 1, colocated=True), 0.0, "colocated, 1 host: nothing crosses")
    close(bs.floor_seconds(100e6, 1e9, 4, 4, colocated=True), 1.2, "colocated, 4 hosts: 2 * 3/4 of M each way")
    w, s = bs.expected_bytes_per_step(100e6, 4, 2)
    close(w, 100e6, "worker bytes")
    close(s, 200e6, "server bytes, 4 workers on 2 servers")
    w, s = bs.expected_bytes_per_step(100e6, 4, 4)
    close(s, 100e6, "server bytes, 4 workers on 4 servers")
    rows = [
        {"workers": 1, "samples_s": 100.0, "step_s": 0.32, "compute_s": 0.3, "floor_s": 0.1, "host_cpu": 0.5},
        {"workers": 2, "samples_s": 160.0, "step_s": 0.40, "compute_s": 0.3, "floor_s": 0.36, "host_cpu": 0.7},
        {"workers": 4, "samples_s": 200.0, "step_s": 0.64, "compute_s": 0.3, "floor_s": 0.2, "host_cpu": 0.95},
    ]
    worst = bs.judge_rows(rows)
    close(rows[1]["speedup"], 1.6, "speed-up")
    close(rows[1]["efficiency"], 0.8, "efficiency")
    close(rows[0]["ratio"], 0.3 / 0.32, "ratio (compute bound)")
    close(rows[1]["ratio"], 0.36 / 0.40, "ratio (floor bound)")
    if [r["cpu_bound"] for r in rows] != [False, False, True]:
        fail(f"CPU-bound marks {[r['cpu_bound'] for r in rows]}")
    close(worst, 0.9, "scaling/floor: the worst row not CPU-bound")
    unmeasured = dict(rows[0], host_cpu=float("nan"))
    if bs.judge_rows([unmeasured]) is not None or not unmeasured["cpu_bound"]:
        fail("a row whose CPU was not measured must count as CPU-bound")
    if bs.judge_rows([dict(rows[2])]) is not None:
        fail("scaling/floor over CPU-bound rows only must be none")
    if any(r["host_bound"] for r in rows):
        fail("a row never run unshaped cannot be host-bound")
    # The unshaped rerun: only rows below the goal and not CPU-bound; host-bound when even unshaped the step
    # is longer than bound / 0.9. Bound 0.36 s: unshaped 0.45 s reaches 0.8 (host-bound), 0.2 s 1.8 (not).
    slow = {"workers": 2, "samples_s": 100.0, "step_s": 0.5, "compute_s": 0.3, "floor_s": 0.36, "host_cpu": 0.6}
    if not bs.needs_host_check(slow):
        fail("a row at 0.72 of its bound, host 60% busy, must be rerun unshaped")
    if bs.needs_host_check(slow, "off") or not bs.needs_host_check(dict(slow, step_s=0.38), "all"):
        fail("--host-check off reruns no row, all every row")
    for row, why in ((dict(slow, step_s=0.38), "at 0.95 of its bound"), (dict(slow, host_cpu=0.95), "CPU-bound"),
                     (dict(slow, host_cpu=float("nan")), "with its CPU unmeasured (counted CPU-bound)")):
        if bs.needs_host_check(row):
            fail(f"a row {why} must not be rerun unshaped")
    held, free = dict(slow, unshaped_s=0.45), dict(slow, unshaped_s=0.2)
    worst = bs.judge_rows([held, free])
    if not held["host_bound"] or free["host_bound"] or held["cpu_bound"]:
        fail(f"host-bound marks: unshaped 0.45 s -> {held['host_bound']}, 0.2 s -> {free['host_bound']}")
    close(worst, 0.72, "scaling/floor counts the row the host does not hold")
    if bs.judge_rows([dict(held)]) is not None:
        fail("scaling/floor over host-bound rows only must be none")
    # Plain TCP on the same links (raw_s): TCP-bound when even it is longer than bound / 0.9; the ratio to raw
    # is max(compute, raw) / step. Bound 0.36 s: raw 0.42 s reaches 0.857 (TCP-bound), 0.38 s 0.947 (not);
    # a raw step under the compute counts the compute.
    wire, clear, quick = dict(slow, raw_s=0.42), dict(slow, raw_s=0.38), dict(slow, compute_s=0.4, floor_s=0.1,
                                                                              raw_s=0.2)
    worst = bs.judge_rows([wire, clear, quick])
    if [r["tcp_bound"] for r in (wire, clear, quick)] != [True, False, False] or wire["host_bound"]:
        fail(f"TCP-bound marks: raw 0.42 s -> {wire['tcp_bound']}, 0.38 s -> {clear['tcp_bound']}, "
             f"0.2 s under a 0.4 s compute -> {quick['tcp_bound']}")
    close(wire["raw_ratio"], 0.42 / 0.5, "ratio to raw")
    close(quick["raw_ratio"], 0.4 / 0.5, "ratio to raw: the compute when it is longer than raw")
    close(worst, 0.72, "scaling/floor leaves out the TCP-bound row")
    close(bs.raw_worst([wire, clear, quick]), 0.76, "scaling/raw TCP: the worst ratio to raw")
    if slow.get("raw_ratio") is not None or bs.raw_worst(rows) is not None:
        fail("rows never timed with plain TCP have no ratio to raw, and scaling/raw TCP is none over them")
    if bs.judge_rows([dict(wire)]) is not None:
        fail("scaling/floor over TCP-bound rows only must be none")
    busy = [dict(slow, raw_s=0.38, host_cpu=0.95)]
    if bs.judge_rows(busy) is not None or bs.raw_worst(busy) is not None:
        fail("scaling/floor and scaling/raw TCP leave out CPU-bound rows")
    held_raw = [dict(slow, raw_s=0.0, unshaped_s=0.45)]  # host-bound, nothing crossing a link
    if bs.judge_rows(held_raw) is not None or bs.raw_worst(held_raw) is not None or not held_raw[0]["host_bound"]:
        fail("scaling/floor and scaling/raw TCP leave out host-bound rows")
    # Half the pace (half_s: the link's rate halved, the stand-in doubled, so the bound doubles): CPU-bound when
    # that run reaches the goal and loses at most half the time the row lost. Bound 0.36 s, step 0.5 s (0.14 s
    # lost): at half the pace 0.75 s loses 0.03 s (0.96 of 0.72, CPU-bound), 0.84 s loses 0.12 s (0.86, not).
    # A fixed cost stays: step 0.42 s (0.06 s lost), half pace 0.78 s (0.92, but 0.06 s lost again): not.
    paced, unpaced, fixed = dict(slow, half_s=0.75), dict(slow, half_s=0.84), dict(slow, step_s=0.42, half_s=0.78)
    worst = bs.judge_rows([paced, unpaced, fixed])
    if [r["pace_bound"] for r in (paced, unpaced, fixed)] != [True, False, False]:
        fail(f"half-pace marks: 0.75 s -> {paced['pace_bound']}, 0.84 s -> {unpaced['pace_bound']}, "
             f"a fixed cost -> {fixed['pace_bound']}")
    if not paced["cpu_bound"] or paced["cpu_busy"] or unpaced["cpu_bound"] or paced["host_bound"]:
        fail("a row marked at half the pace is CPU-bound (its cores were not 90% busy), the others are not")
    close(paced["half_ratio"], 0.72 / 0.75, "half-pace ratio: twice the bound over the half-pace step")
    close(worst, 0.72, "scaling/floor leaves out the row CPU-bound at half the pace")
    if bs.judge_rows([dict(paced)]) is not None or bs.raw_worst([dict(paced, raw_s=0.38)]) is not None:
        fail("scaling/floor and scaling/raw TCP leave out rows CPU-bound at half the pace")
    never = dict(slow)
    bs.judge_rows([never])
    if never["half_ratio"] is not None or never["pace_bound"] or never["cpu_bound"]:
        fail("a row never run at half the pace has no half-pace ratio and no mark from it")
    # Which rows run at half the pace: under auto those the host check ran that neither their unshaped step
    # nor plain TCP explains; all every row; off none.
    if not bs.needs_half_pace(slow) or not bs.needs_half_pace(dict(slow, unshaped_s=0.2, raw_s=0.38)):
        fail("a checked row neither host- nor TCP-bound must run at half the pace")
    for row, why in ((dict(slow, unshaped_s=0.45), "host-bound"), (dict(slow, raw_s=0.42), "TCP-bound"),
                     (dict(slow, step_s=0.38), "at 0.95 of its bound"), (dict(slow, host_cpu=0.95), "90% busy")):
        if bs.needs_half_pace(row):
            fail(f"a row {why} must not run at half the pace")
    if not bs.crosses_links(slow) or bs.crosses_links(dict(slow, floor_s=0.0)):
        fail("plain TCP times a row whose bytes cross a link (floor > 0), never a worker beside its only server")
    if bs.needs_half_pace(slow, "off") or not bs.needs_half_pace(dict(slow, step_s=0.38), "all"):
        fail("--host-check off runs no row at half the pace, all every row")
    half = bs.half_pace(emulated_hosts.Link(1e9, 2.0))
    if (half.rate_bits, half.latency_ms) != (5e8, 4.0):
        fail(f"half the pace of 1gbit,2ms: {half}")
    # A row's hosts: server i on worker i's host when colocated, else on hosts of their own.
    from types import SimpleNamespace as layout
    if (bs.row_hosts(layout(servers="colocated"), 2) != (["worker0", "worker1"], ["worker0", "worker1"])
            or bs.row_hosts(layout(servers="equal"), 2) != (["worker0", "worker1"], ["server0", "server1"])
            or bs.row_hosts(layout(servers="3"), 1) != (["worker0"], ["server0", "server1", "server2"])):
        fail("row_hosts: the hosts of colocated, equal and numbered servers")
    if bs.distinct(["scheduler", "worker0", "worker1", "worker0"]) != ["scheduler", "worker0", "worker1"]:
        fail("distinct: each host once, in order")
    alone = dict(rows[1])  # a run without a one-worker row has nothing to compare with
    bs.judge_rows([alone])
    if alone["speedup"] is not None or bs.against_one(alone["efficiency"]) != "-" or bs.against_one(1.6) != "1.60":
        fail(f"without a one-worker row speed-up and efficiency print '-': {alone}")
    metrics = ('{"config": {"seed": 0}}\n'
               '{"epoch": 0, "time_s": 1.5, "traffic": {"scheduler": {"rx": 8704, "tx": 2970}}}\n'
               '{"epoch": 1, "time_s": 0.823, "traffic": {"server_0": {"rx": 3533701, "tx": 1610612736, "kinds": {}},'
               ' "worker_0": {"rx": 12, "tx": 1761607}}}\n'
               '{"epoch": 2, "time_')  # a line still being written
    times, per_epoch = bs.parse_metrics(metrics)
    if times != {0: 1.5, 1: 0.823} or per_epoch[1] != {"server_0": (3533701.0, 1610612736.0),
                                                       "worker_0": (12.0, 1761607.0)}:
        fail(f"metrics read as {times}, {per_epoch}")
    if len(bs.epoch_records(metrics)) != 2:
        fail("epoch_records: the config record and a half-written line are not epochs")
    args = bs.parse_args(["--troupe", "/x/troupe", "--model", "mlp", "--link", "1gbit", "--compute-ms", "20",
                          "--workers", "1,2", "--results", "r.jsonl"])
    if bs.command_text(["--troupe", "/x/troupe", "--model", "mlp", "--results", "r.jsonl", "--link", "1gbit"]) \
            != "troupe bench scaling --model mlp --link 1gbit":
        fail("command_text: the command without the executable and the results file")
    if bs.variant_text(args) != "" or bs.variant_text(bs.parse_args(
            ["--model", "mlp", "--link", "1gbit", "--compute-ms", "20", "--compression", "fp16", "--no-priority"])) \
            != "compression=fp16,no-priority":
        fail("variant_text: what differs from the scaling table's defaults")
    judged = [dict(r, workers=w, colocated=False, servers=w) for w, r in ((1, rows[0]), (2, rows[1]))]
    bs.judge_rows(judged)
    records = bs.result_records(args, judged, "troupe bench scaling --model mlp")
    if [r["id"] for r in records] != ["scaling/mlp/1gbit/20ms/equal/1w", "scaling/mlp/1gbit/20ms/equal/2w"]:
        fail(f"result ids: {[r['id'] for r in records]}")
    for r, j in zip(records, judged):
        marked = j["cpu_bound"] or j["host_bound"] or j["tcp_bound"]
        if r["group"] != "scaling" or (r["value"] is None) != marked or (r["mark"] is None) == marked:
            fail(f"a record has its ratio, or its mark where the host limited the row: {r} for {j}")
    for argv, says in ((["--model", "nope", "--link", "1gbit", "--compute-ms", "1"], "--model"),
                       (["--model", "mlp", "--link", "1gb", "--compute-ms", "1"], "--link"),
                       (["--model", "mlp", "--link", "1gbit", "--compute-ms", "1", "--workers", "1,x"], "--workers"),
                       (["--model", "mlp", "--link", "1gbit", "--compute-ms", "1", "--servers", "some"], "--servers"),
                       (["--model", "mlp", "--link", "1gbit", "--compute-ms", "0"], "--compute-ms"),
                       (["--model", "mlp", "--link", "1gbit", "--compute-ms", "1", "--epochs", "1"], "--epochs"),
                       (["--model", "mlp", "--link", "1gbit", "--compute-ms", "1", "--compression", "3bit"],
                        "--compression"),
                       (["--model", "mlp", "--link", "1gbit", "--compute-ms", "1", "--compression", "fp16:2"],
                        "--compression"),
                       (["--model", "mlp", "--link", "1gbit", "--compute-ms", "1", "--computes-per-worker", "0"],
                        "--computes-per-worker"),
                       (["--model", "mlp", "--link", "1gbit", "--compute-ms", "1", "--topology", "ring"], "--topology"),
                       (["--model", "mlp", "--link", "1gbit", "--compute-ms", "1", "--epoch-examples", "0"],
                        "--epoch-examples")):
        run = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "scripts", "bench_scaling.py")] + argv,
                             capture_output=True, text=True, timeout=60)
        if run.returncode != 2 or says not in run.stderr:
            fail(f"{argv}: exit {run.returncode}, not a usage error naming {says}: {run.stderr[-300:]}")
    # Compression: the share of float32 bytes each direction moves.
    for text, want in (("none", (1.0, 1.0)), ("fp16", (0.5, 0.5)), ("bf16", (0.5, 0.5)),
                       ("2bit", (17 / 256, 17 / 256)), ("2bit:0.05", (17 / 256, 17 / 256)),
                       ("2bit:fit", (17 / 256, 17 / 256)), ("push:2bit", (17 / 256, 1.0)),
                       ("push:2bit:fit", (17 / 256, 1.0)), ("push:fp16", (0.5, 1.0))):
        if bs.compression_shares(text) != want:
            fail(f"compression {text}: shares {bs.compression_shares(text)}, expected {want}")
    for bad in ("push:none", "2bit:-1", "2bit:x", "fp16:fit", "zip"):
        try:
            bs.compression_shares(bad)
            fail(f"compression {bad} was accepted")
        except ValueError:
            pass
    # --no-priority and the slices reach every node through the config they all read
    with tempfile.TemporaryDirectory() as tmp:
        def cluster_line(argv):
            args = bs.parse_args(["--model", "mlp", "--link", "1gbit", "--compute-ms", "1"] + argv)
            bs.write_config(os.path.join(tmp, "c.troupe"), args, 1, 1)
            return next(l for l in open(os.path.join(tmp, "c.troupe")) if l.startswith("cluster"))

        for argv, want in (([], None), (["--no-priority"], "priority = false")):
            cluster = cluster_line(argv)
            if (want is None and "priority" in cluster) or (want is not None and want not in cluster):
                fail(f"{argv}: the config's cluster line is {cluster!r}")
        for argv, want in (([], f"slice_bytes = {512 << 10}"), (["--slice-bytes", "4194304"], "slice_bytes = 4194304")):
            cluster = cluster_line(argv)
            if want not in cluster:
                fail(f"{argv}: the config's cluster line is {cluster!r}, expected {want!r}")
        for argv, want in (([], "tcp_congestion = auto"), (["--tcp-congestion", "reno"], "tcp_congestion = reno")):
            cluster = cluster_line(argv)
            if want not in cluster:
                fail(f"{argv}: the config's cluster line is {cluster!r}, expected {want!r}")
    # the nodes are told the link's rate (paced channels, a fixed push order) unless --no-pace
    for argv, link, want in (([], "1gbit", ["--link-mbit", "1000"]), ([], "10gbit,1ms", ["--link-mbit", "10000"]),
                             ([], "500mbit", ["--link-mbit", "500"]), (["--no-pace"], "1gbit", [])):
        args = bs.parse_args(["--model", "mlp", "--link", link, "--compute-ms", "1"] + argv)
        got = bs.pace_flags(args, emulated_hosts.parse_link(link))
        if got != want:
            fail(f"{argv} at {link}: the nodes get {got}, expected {want}")
    if bs.pace_flags(bs.parse_args(["--model", "mlp", "--link", "1gbit", "--compute-ms", "1"]), emulated_hosts.Link()):
        fail("an unshaped link has no rate to tell")
    # the header says what the congestion control resolved to
    for setting, want in (("reno", "reno"), ("system", "system ("), ("auto", "auto (")):
        if not bs.congestion_text(setting).startswith(want):
            fail(f"--tcp-congestion {setting}: the header says {bs.congestion_text(setting)!r}")
    # a slice below one float is refused, naming the flag
    try:
        with contextlib.redirect_stderr(io.StringIO()) as err:
            bs.parse_args(["--model", "mlp", "--link", "1gbit", "--compute-ms", "1", "--slice-bytes", "3"])
    except SystemExit:
        if "--slice-bytes 3" not in err.getvalue():
            fail(f"--slice-bytes 3 refused without naming it: {err.getvalue()!r}")
    else:
        fail("--slice-bytes 3 was accepted")
    # Several computes per host: summed on the host (dist_sync: hierarchical; dist_async: the host's sum
    # pushed straight to the shards, answered per host); one compute per host: the preset itself.
    if bs.topology_text("bsp", 3, 1) != "bsp" or bs.topology_text("async", 3, 1) != "async":
        fail("one compute per host must use the bsp and async presets")
    if bs.topology_text("bsp", 3, 2) != "hierarchical(machines = 3)":
        fail(f"bsp with 2 computes per host: {bs.topology_text('bsp', 3, 2)}")
    routes = bs.topology_text("async", 3, 2)
    for want in ("(machines = 3)", "compute -> aggregate(machine) -> shard", "shard -> aggregate(machine)"):
        if want not in routes:
            fail(f"async with 2 computes per host: {routes!r} lacks {want!r}")
    with tempfile.TemporaryDirectory() as tmp:
        args = bs.parse_args(["--model", "mlp", "--link", "1gbit", "--compute-ms", "1", "--computes-per-worker", "2",
                              "--steps", "5"])
        bs.write_config(os.path.join(tmp, "c.troupe"), args, 3, 3)
        text = open(os.path.join(tmp, "c.troupe")).read()
        for want in ("workers = 6", "worker_nodes = 3", "examples = 960"):  # 6 computes x 32 x 5 steps
            if want not in text:
                fail(f"2 computes on each of 3 hosts: the config lacks {want!r}:\n{text}")
    # an epoch of E examples: every compute takes a batch per step
    if bs.epoch_steps(50000, 3, 1, 32) != 521 or bs.epoch_steps(96, 3, 1, 32) != 1 or bs.epoch_steps(1000, 2, 2, 32) != 8:
        fail("epoch steps")
    # the CPU's window: from the first sample after epoch 0's line to the first after the last epoch's, not
    # through the final pull and the goodbyes after it
    polls = [(0, "a", True), (1, "b", True), (1, "c", True), (2, "d", True), (3, "e", True), (3, "f", True),
             (3, "g", False)]
    if bs.epoch_window(polls, 3) != ("b", "e"):
        fail(f"the timed epochs' window: {bs.epoch_window(polls, 3)}, not ('b', 'e')")
    if bs.epoch_window(polls[:4] + [(2, "e", False)], 3) != ("b", "d"):
        fail("a run whose last epoch line never came: its window ends at the last sample with every node running")
    if bs.epoch_window(polls[:1], 3) != (None, None) or bs.epoch_window([(3, "a", True)], 3) != ("a", None):
        fail("a run with no sample after epoch 0, or none after it: no window")
    # --help: one usage (argparse's), every line within 100 columns however wide the terminal
    shown = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "scripts", "bench_scaling.py"), "--help"],
                           capture_output=True, text=True, timeout=60, env=dict(os.environ, COLUMNS="200"))
    wide = [line for line in shown.stdout.splitlines() if len(line) > 100]
    if shown.returncode != 0 or shown.stdout.count("usage:") != 1 or wide:
        fail(f"--help: {shown.stdout.count('usage:')} usage blocks, {len(wide)} lines over 100 columns: {wide[:2]}")
    print("ok: arithmetic: floors, bytes, judgement, parsing, refusals, --no-priority, pacing, slices, congestion control, "
          "computes per host and the timed epochs' window")


def model_ms(table):
    """Milliseconds the table's model takes one way over its 1 Gbit link (the header's MiB)."""
    return float(re.search(r"model \S+: ([\d.]+) MiB", table).group(1)) * MIB * 8 / 1e9 * 1000


def check_run(troupe):
    if os.geteuid() != 0:
        run = subprocess.run([troupe, "bench", "scaling", "--model", "mlp", "--link", "1gbit", "--compute-ms", "10"],
                             capture_output=True, text=True, timeout=60)
        if "needs root" not in run.stderr:
            fail(f"without root the bench does not refuse saying so: {run.stderr}")
        print("skipped: needs root (the bench refused, saying so)")
        raise SystemExit(77)
    before = set(emulated_hosts.leftovers())
    results = tempfile.NamedTemporaryFile(prefix="bench-scaling-results-", suffix=".jsonl", delete=False).name
    run = subprocess.run([troupe, "bench", "scaling", "--model", "mlp", "--link", "1gbit", "--workers", "1,2",
                          "--servers", "equal", "--compute-ms", "20", "--steps", "4", "--epochs", "2",
                          "--host-check", "all", "--results", results],
                         capture_output=True, text=True, timeout=600)
    with open(results) as f:
        records = [json.loads(line) for line in f]
    os.unlink(results)
    if run.returncode != 0:
        fail(f"exit {run.returncode}: {run.stdout[-2000:]}{run.stderr[-2000:]}")
    lines = run.stdout.strip().splitlines()
    if not re.fullmatch(r"scaling/floor: (\d+\.\d+|n/a \(every row CPU-, host- or TCP-bound\))", lines[-1]):
        fail(f"last line: {lines[-1]}")
    if not re.fullmatch(r"scaling/raw TCP: (\d+\.\d+|n/a \(no row checked, or every checked row CPU- or host-bound\))",
                        lines[-2]):
        fail(f"line before the last: {lines[-2]}")
    rows = [l for l in lines if re.match(r"\| \d+ \|", l)]
    if len(rows) != 2:
        fail(f"{len(rows)} rows:\n{run.stdout}")
    for row in rows:  # every row rerun unshaped and timed with raw TCP (--host-check all), marked by the rules
        cells = [c.strip() for c in row.strip("|").split("|")]
        bound_ms = float(re.fullmatch(r"max\(([\d.]+), [\d.]+\) = ([\d.]+)", cells[6]).group(2))
        compute_ms = float(re.fullmatch(r"max\(([\d.]+), [\d.]+\) = ([\d.]+)", cells[6]).group(1))
        unshaped = re.fullmatch(r"(\d+)( host-bound)?", cells[12])
        if not unshaped or int(unshaped.group(1)) <= 0:
            fail(f"--host-check all: a row without its unshaped step: {cells[12]!r}\n{run.stdout}{run.stderr}")
        if not mark_fits(bound_ms, float(unshaped.group(1)), bool(unshaped.group(2))):
            fail(f"host-bound mark against bound {bound_ms} ms, unshaped {unshaped.group(1)} ms: {cells[12]!r}")
        raw = re.fullmatch(r"(\d+) \((\d+\.\d+)\)( TCP-bound)?", cells[13])
        # the raw exchange moves the model's bytes each way over a 1 Gbit link: never faster than the link allows
        if not raw or int(raw.group(1)) < 0.95 * model_ms(run.stdout):
            fail(f"--host-check all: a row without a raw TCP step the link allows: {cells[13]!r}\n{run.stdout}")
        if not mark_fits(bound_ms, max(compute_ms, float(raw.group(1))), bool(raw.group(3))):
            fail(f"TCP-bound mark against bound {bound_ms} ms, raw {raw.group(1)} ms: {cells[13]!r}")
        memory = re.fullmatch(r"(\d+), (\d+)", cells[11])  # a worker's and a server's peak resident MiB
        if not memory or min(int(memory.group(1)), int(memory.group(2))) <= 0:
            fail(f"a row without a worker's and a server's peak memory: {cells[11]!r}")
        half = re.fullmatch(r"(\d+) \((\d+\.\d+)\)( CPU-bound)?", cells[14])
        # at half the pace the stand-in takes twice as long: never a step shorter than that
        if not half or int(half.group(1)) < 2 * compute_ms:
            fail(f"--host-check all: a row without a half-pace step of at least {2 * compute_ms} ms: {cells[14]!r}")
        step_ms, half_ms = float(cells[5]), float(half.group(1))
        paced = 2 * bound_ms / half_ms >= bs.GOAL and half_ms - 2 * bound_ms <= (step_ms - bound_ms) / 2
        if paced != bool(half.group(3)):
            fail(f"half-pace mark against bound {bound_ms} ms, step {step_ms} ms, half pace {half_ms} ms: {cells[14]!r}")
    # --results: a record per row, its ratio the table's (or the mark the table gives the row)
    if [r["id"] for r in records] != ["scaling/mlp/1gbit/20ms/equal/1w", "scaling/mlp/1gbit/20ms/equal/2w"]:
        fail(f"--results: records {[r['id'] for r in records]}")
    for row, r in zip(rows, records):
        cells = [c.strip() for c in row.strip("|").split("|")]
        if r["value"] is not None and abs(r["value"] - float(cells[7])) > 0.006:
            fail(f"--results: ratio {r['value']} where the table says {cells[7]}")
        if not all(r.get(k) for k in ("command", "date", "commit", "machine")) or "--troupe" in r["command"]:
            fail(f"--results: a record without its command, date, commit or machine: {r}")
    model = float(re.search(r"model mlp: ([\d.]+) MiB", run.stdout).group(1))
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        workers = int(cells[0])
        w_tx, w_rx, w_exp = map(float, re.fullmatch(r"([\d.]+), ([\d.]+) \(([\d.]+)\)", cells[8]).groups())
        s_rx, s_tx, s_exp = map(float, re.fullmatch(r"([\d.]+), ([\d.]+) \(([\d.]+)\)", cells[9]).groups())
        if abs(w_exp - model) > 0.05 or abs(s_exp - model) > 0.05:  # equal servers: W*M/S = M
            fail(f"{workers} worker(s): expected {w_exp}, {s_exp} MiB per step, the model is {model} MiB")
        # frames add at most a little (docs/protocol.md: 112 bytes per frame + 32 per key), and the
        # table rounds to 0.1 MiB
        for what, got, want in (("worker tx", w_tx, w_exp), ("worker rx", w_rx, w_exp),
                                ("server rx", s_rx, s_exp), ("server tx", s_tx, s_exp)):
            if not (want - 0.1 <= got <= want * 1.01 + 0.1):
                fail(f"{workers} worker(s): {what} {got} MiB per step, expected {want}")
    # two worker hosts of two computes each, servers on the workers' hosts, dist_async: the host's sum is
    # what leaves it (the model's bytes per step), and every compute's samples count
    run2 = subprocess.run([troupe, "bench", "scaling", "--model", "mlp", "--link", "1gbit", "--workers", "2",
                           "--servers", "colocated", "--computes-per-worker", "2", "--topology", "async",
                           "--compute-ms", "20", "--steps", "4", "--epochs", "2", "--epoch-examples", "1000",
                           "--host-check", "off"],
                          capture_output=True, text=True, timeout=600)
    if run2.returncode != 0:
        fail(f"2 computes per host, async: exit {run2.returncode}: {run2.stdout[-2000:]}{run2.stderr[-2000:]}")
    rows2 = [l for l in run2.stdout.splitlines() if re.match(r"\| \d+ \|", l)]
    if len(rows2) != 1 or "topology async, 2 computes per worker host" not in run2.stdout:
        fail(f"2 computes per host, async:\n{run2.stdout}")
    cells = [c.strip() for c in rows2[0].strip("|").split("|")]
    step_ms, samples_s = float(cells[5]), float(cells[2])
    if not math.isclose(samples_s, 4 * 32 / (step_ms / 1000), rel_tol=0.02):
        fail(f"samples/s {samples_s} is not 4 computes x 32 per {step_ms} ms step")
    w_tx = float(re.fullmatch(r"([\d.]+), ([\d.]+) \(([\d.]+)\)", cells[8]).group(1))
    if not model - 0.1 <= w_tx <= model * 1.01 + 0.1:
        fail(f"a host of 2 computes pushed {w_tx} MiB per step, the model is {model} MiB")
    if len(cells) != 17 or cells[12] != "-" or cells[13] != "-" or cells[14] != "-":
        fail(f"--epoch-examples: expected 17 columns, unchecked, got {len(cells)}: {rows2[0]}")
    left = set(emulated_hosts.leftovers()) - before
    if left:
        fail(f"left behind: {sorted(left)}")
    print(f"ok: run: two rows, bytes per step as the arithmetic says, {lines[-1]}; 2 computes per host, async")
    print("\n".join(lines[-5:]))


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "arithmetic":
        check_arithmetic()
    elif len(sys.argv) == 3 and sys.argv[1] == "run":
        check_run(os.path.abspath(sys.argv[2]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
