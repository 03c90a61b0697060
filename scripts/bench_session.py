#!/usr/bin/env python3
"""What the training session costs on top of the bare step, for mlp, lenet and resnet-20, in
one run.

Each round runs `troupe bench --models M --end-to-end` once per model. That one process first
times the bare step (forward + backward + the SGD update the shard applies, weight decay
included, on batches built in advance from the job's own data), then trains the same job
through the actors (loader, compute, aggregator, shard, coordinator, metrics: what `troupe
train` spawns, on the same actor system settings) and times its epochs after the first. Data:
Fashion-MNIST for the MLP (a whole epoch, 469 steps), synthetic 1x28x28 (60 steps) for LeNet
and 3x32x32 (20 steps) for ResNet-20, so a round takes well under a minute; batch 128 and the
same --threads for both measurements.

The ratio end-to-end / bare is taken per process (both halves ran seconds apart) and its median
over the rounds is compared with the target (0.8 for the MLP, 0.9 for LeNet and ResNet-20).
Beside it, per step: the session's extra wall time, the whole process's CPU time and voluntary
context switches (thread wake-ups) in the session and in the bare step, and the time the loader
takes to build one batch (in the session it runs on a scheduler thread beside the step).

With --variant NAME=FLAGS (repeatable) each round runs every variant in turn (A B A B ...),
e.g. --variant detached="--compute detached" --variant scheduled="--compute scheduled".
Leading NAME=VALUE words of FLAGS set environment variables for that variant's process, e.g.
--variant bound="OMP_PROC_BIND=close OMP_PLACES=cores".

usage: scripts/bench_session.py [--troupe build/apps/troupe] [--models mlp,lenet,resnet-20]
                                [--rounds 3] [--threads 2] [--batch-size 128]
                                [--variant NAME=FLAGS ...]
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = {"mlp": 0.8, "lenet": 0.9, "resnet-20": 0.9}


def fields(line):
    return dict(re.findall(r"(\w+)=([^\s(]+)", line.split("(=")[0]))


def split_env(words):
    """Leading NAME=VALUE words (environment) and the flags after them."""
    env = {}
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        name, value = words[0].split("=", 1)
        env[name] = value
        words = words[1:]
    return env, words


def run_round(troupe, model, common, extra):
    env, extra = split_env(extra)
    cmd = [troupe, "bench", "--models", model, "--end-to-end"] + common + extra
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    modes = {}
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            f = fields(line)
            modes[f["mode"]] = f
    if not {"bare", "session", "load"} <= modes.keys():
        sys.exit(f"unexpected output of {' '.join(cmd)}:\n{out.stdout}")
    bare, session = modes["bare"], modes["session"]
    return {
        "bare": float(bare["imgs_per_s"]),
        "e2e": float(session["imgs_per_s"]),
        "ratio": float(session["imgs_per_s"]) / float(bare["imgs_per_s"]),
        "extra_ms": float(session["step_ms"]) - float(bare["step_ms"]),
        "compute_ms": float(session["compute_ms"]),
        "waiting_ms": float(session["waiting_ms"]),
        "bare_ms": float(bare["step_ms"]),
        "cpu_bare": float(bare["cpu_ms_per_step"]),
        "cpu_e2e": float(session["cpu_ms_per_step"]),
        "csw_bare": float(bare["vcsw_per_step"]),
        "csw_e2e": float(session["vcsw_per_step"]),
        "load_ms": float(modes["load"]["batch_ms"]),
    }


def med_range(values, fmt):
    return (f"{fmt.format(statistics.median(values))} "
            f"[{fmt.format(min(values))}-{fmt.format(max(values))}]")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--troupe", default=os.path.join(HERE, "..", "build", "apps", "troupe"))
    ap.add_argument("--models", default="mlp,lenet,resnet-20")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=FLAGS: more `troupe bench --end-to-end` flags, run in turn")
    a = ap.parse_args()
    variants = []
    for v in a.variant or ["default="]:
        name, _, flags = v.partition("=")
        variants.append((name, shlex.split(flags)))
    models = [m for m in a.models.split(",") if m]
    for m in models:
        if m not in TARGETS:
            sys.exit(f"unknown model {m} (known: {', '.join(TARGETS)})")
    common = ["--batch-size", str(a.batch_size), "--threads", str(a.threads)]
    results = {(m, name): [] for m in models for name, _ in variants}
    for r in range(a.rounds):
        for m in models:
            for name, flags in variants:
                res = run_round(a.troupe, m, common, flags)
                results[(m, name)].append(res)
                print(f"round {r + 1}/{a.rounds} {m:<9} {name:<10} bare {res['bare']:>9.0f} "
                      f"end-to-end {res['e2e']:>9.0f} img/s  ratio {res['ratio']:.3f}",
                      file=sys.stderr, flush=True)
    print(f"\n{a.rounds} rounds, batch {a.batch_size}, {a.threads} threads; "
          "median [min-max] over rounds; ratio = end-to-end / bare, per round")
    print(f"{'model':<10} {'variant':<10} {'bare img/s':>24} {'end-to-end img/s':>24} "
          f"{'ratio':>20} {'target':>6}  met")
    rows = [(m, name, results[(m, name)]) for m in models for name, _ in variants]
    for m, name, rs in rows:
        ratio = statistics.median(x["ratio"] for x in rs)
        print(f"{m:<10} {name:<10} {med_range([x['bare'] for x in rs], '{:.0f}'):>24} "
              f"{med_range([x['e2e'] for x in rs], '{:.0f}'):>24} "
              f"{med_range([x['ratio'] for x in rs], '{:.3f}'):>20} {TARGETS[m]:>6.1f}  "
              f"{'yes' if ratio >= TARGETS[m] else 'no'}")
    print("\nwhere the time goes, per step (medians): extra = end-to-end step - bare step; "
          "of the end-to-end step, compute = in the compute actor's step, waiting = for weights "
          "and batches; cpu = process CPU time; wake-ups = voluntary context switches; "
          "load = one batch built")
    print(f"{'model':<10} {'variant':<10} {'bare ms':>8} {'extra ms':>9} {'compute':>8} "
          f"{'waiting':>8} {'cpu bare':>9} "
          f"{'cpu e2e':>8} {'wake-ups bare':>14} {'wake-ups e2e':>13} {'load ms':>8}")
    for m, name, rs in rows:
        med = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
        print(f"{m:<10} {name:<10} {med['bare_ms']:>8.3f} {med['extra_ms']:>9.3f} "
              f"{med['compute_ms']:>8.3f} {med['waiting_ms']:>8.3f} "
              f"{med['cpu_bare']:>9.3f} {med['cpu_e2e']:>8.3f} {med['csw_bare']:>14.1f} "
              f"{med['csw_e2e']:>13.1f} {med['load_ms']:>8.3f}")


if __name__ == "__main__":
    main()
