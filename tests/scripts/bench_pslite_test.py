#!/usr/bin/env python3
"""Tests of scripts/bench_pslite.py (ps-lite beside `troupe bench scaling`), its parts that need neither
root nor ps-lite (ps-lite is built outside the project; the figures are in docs/benchmarks.md, the runs
in docs/notes/benchmarks-notebook.md).

usage: bench_pslite_test.py pure
       bench_pslite_test.py plan TROUPE

  pure  the push-group list parsed (and malformed lines refused, naming the line), the plan file
        model_step reads (per group and per key), the workers' lines (the slowest worker's median),
        the table's arithmetic (medians over rounds, bound / step, contended rows) and flag refusals
        naming the flag
  plan  `troupe check --push-groups` for the config the bench writes (mlp, 2 servers): the list
        parses, covers every parameter `troupe check` counts, each group on server 0 or 1, the
        groups' work shares sum to 1
"""
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "bench_pslite.py")
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import bench_pslite as bp  # noqa: E402
import bench_scaling as bs  # noqa: E402


def fail(why):
    print(f"FAIL: {why}")
    raise SystemExit(1)


def refused(text, says):
    try:
        bp.parse_push_groups(text)
    except ValueError as e:
        if says not in str(e):
            fail(f"{text!r} refused as '{e}', not naming {says}")
        return
    fail(f"{text!r} was accepted")


def check_pure():
    text = ("push_group 0 shard 1 node server_1 elements 1024 work 0.25 fc.weight[0:1024]=1024\n"
            "push_group 1 shard 0 node server_0 elements 30 work 0.75 fc.bias=10 fc1.bias=20\n")
    groups = bp.parse_push_groups(text)
    if groups != [(1, 0.25, [1024]), (0, 0.75, [10, 20])]:
        fail(f"push groups parsed as {groups}")
    refused("push_group 0 shard 0 node - elements 5 work 1 a=5", "line 1")
    refused("push_group 0 shard 0 node server_0 elements 6 work 1 a=5", "keys of 5 elements")
    refused(text.splitlines()[1], "group 1 where 0")
    refused("push_group 0 shard 0 node server_0 elements 5 work 1", "line 1")
    refused("push_group 0 shard 0 node server_0 elements 5 a=5", "line 1")  # no work
    refused("push_group 0 shard 0 node server_0 elements 5 work 1.5 a=5", "work '1.5'")
    refused("push_group 0 shard 0 node server_0 elements 5 work nan a=5", "work 'nan'")
    refused("", "none")
    if bp.plan_text(groups).splitlines()[1:] != ["group 1 0.25 1024", "group 0 0.75 10 20"]:
        fail(f"plan per group: {bp.plan_text(groups)!r}")
    if bp.plan_text(groups, "keys").splitlines()[1:] != ["group 1 0.25 1024", "group 0 0.25 10", "group 0 0.5 20"]:
        fail(f"plan per key: {bp.plan_text(groups, 'keys')!r}")
    out = ("pslite_model_step workers=2 servers=2 groups=2 elements=1054 compute_ms=100 step_ms_median=120.5 "
           "min=110.0 max=130.0 worker=0\n# noise\n"
           "pslite_model_step workers=2 servers=2 groups=2 elements=1054 compute_ms=100 step_ms_median=125.0 "
           "min=111.0 max=131.0 worker=1\n")
    step, elements = bp.parse_pslite_output(out)
    if not math.isclose(step, 0.125) or elements != 1054:
        fail(f"workers' lines: {step} s, {elements} elements (the slowest worker: 0.125 s, 1054)")
    for bad, says in (("", "no `pslite_model_step`"), (out.replace("elements=1054 compute_ms=100 step_ms_median=125",
                                                                   "elements=9 compute_ms=100 step_ms_median=125"),
                                                       "different models")):
        try:
            bp.parse_pslite_output(bad)
            fail(f"workers' output {bad!r} was accepted")
        except ValueError as e:
            if says not in str(e):
                fail(f"refused as '{e}', not naming {says}")
    rounds = [{"troupe": 1.0, "pull": 0.9, "load": {"troupe": 1.2, "pull": 0.5}, "cpu": {"troupe": 0.3, "pull": 0.2}},
              {"troupe": 1.2, "pull": 0.7, "load": {"troupe": 1.4, "pull": 1.0}, "cpu": {"troupe": 0.3, "pull": 0.2}},
              {"troupe": 0.8, "pull": 1.0, "load": {"troupe": 0.2, "pull": 0.1}, "cpu": {"troupe": 0.3, "pull": 0.2}}]
    s = bp.summarize(rounds, 0.8)
    for key, want in (("troupe", (1.0, 0.8)), ("pull", (0.9, 0.8 / 0.9))):
        if not all(math.isclose(a, b) for a, b in zip(s[key], want)):
            fail(f"summary {key}: {s[key]}, expected {want}")
    if s["contended"]:
        fail("rows started below a load of 1.5 marked contended")
    if not bp.summarize(rounds + [dict(rounds[0], load={"troupe": 0.1, "pull": 1.6})], 0.8)["contended"]:
        fail("a row started at a load of 1.6 not marked contended")
    row = bp.format_row(4, "4", rounds, s, ["troupe", "pull"])
    if row != ("| 4 | 4 | 1000 [1000 / 1200 / 800] | 900 [900 / 700 / 1000] | 800 | 0.80 | 0.89 | "
               "1.2/0.5, 1.4/1.0, 0.2/0.1 | 30/20, 30/20, 30/20 |"):
        fail(f"table row: {row}")
    if bp.table_head(["troupe", "pull"]).count("|---") != len(row.strip("|").split("|")):
        fail(f"the table's head and rows have different columns: {bp.table_head(['troupe', 'pull'])}")
    base = ["--model", "mlp", "--link", "1gbit", "--compute-ms", "10"]
    for argv, says in ((["--model", "nope", "--link", "1gbit", "--compute-ms", "1"], "--model"),
                       (base[:4] + ["--compute-ms", "0"], "--compute-ms"),
                       (base + ["--workers", "1,x"], "--workers"), (base + ["--servers", "some"], "--servers"),
                       (base + ["--rounds", "0"], "--rounds"), (base + ["--epochs", "1"], "--epochs"),
                       (base + ["--requests", "bytes"], "--requests"), (base + ["--modes", "pull,x"], "--modes"), (["--model", "mlp", "--link", "1gb",
                                                                         "--compute-ms", "1"], "--link")):
        run = subprocess.run([sys.executable, SCRIPT] + argv, capture_output=True, text=True, timeout=60)
        if run.returncode != 2 or says not in run.stderr:
            fail(f"{argv}: exit {run.returncode}, not a usage error naming {says}: {run.stderr[-300:]}")
    print("ok: pure: push groups, plans, workers' lines, the table's arithmetic and flag refusals")


def check_plan(troupe):
    args = bp.parse_args(["--model", "mlp", "--link", "1gbit", "--compute-ms", "10", "--servers", "2"])
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "c.troupe")
        bs.write_config(config, args.scaling, 2, 2)
        groups = bp.push_groups_of(troupe, config)
        check = subprocess.run([troupe, "check", config], capture_output=True, text=True, timeout=120)
    count = int(re.search(r"plan: .* (\d+) parameters", check.stdout).group(1))
    pushes = int(re.search(r"pushes: each worker sends (\d+) per step", check.stdout).group(1))
    if sum(sum(lens) for _, _, lens in groups) != count or len(groups) != pushes:
        fail(f"{len(groups)} groups of {sum(sum(l) for _, _, l in groups)} elements; troupe check: {pushes} pushes, "
             f"{count} parameters")
    if {server for server, _, _ in groups} != {0, 1}:
        fail(f"servers of the groups: {sorted({s for s, _, _ in groups})}, expected 0 and 1")
    work = [w for _, w, _ in groups]
    if not math.isclose(sum(work), 1.0, rel_tol=1e-6) or len(set(work)) < 2:
        fail(f"the groups' work shares sum to {sum(work)} (not 1) or are all equal: {work}")
    print(f"ok: plan: {len(groups)} push groups, {count} parameters, on servers 0 and 1, work shares summing to 1")


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "pure":
        check_pure()
    elif len(sys.argv) == 3 and sys.argv[1] == "plan":
        check_plan(os.path.abspath(sys.argv[2]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
