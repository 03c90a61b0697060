#!/usr/bin/env python3
"""Side-by-side training throughput: `troupe bench` against PyTorch 1.13 CPU (Debian's
python3-torch) on the same model, batch, threads and data, in one run.

For each model the two run in turn (Troupe, PyTorch, Troupe, PyTorch, ...) as separate
processes, `--rounds` times, so drift of a shared machine hits both alike; the ratio is taken
per round and the median reported. PyTorch runs with OPENBLAS_NUM_THREADS=1 (its fastest
setting on 2 cores) unless --torch-default-blas is given. It first asks PyTorch which BLAS it
computes with, and refuses to time it on the reference BLAS (scripts/torch_blas.py).

usage: scripts/bench_vs_torch.py [--troupe build/apps/troupe] [--models mlp,lenet,resnet-20]
                                 [--threads 2] [--batch-size 128] [--rounds 3] [--python /usr/bin/python3]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_blas  # noqa: E402  (which BLAS PyTorch runs on)


def images_per_second(cmd, env):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"imgs_per_s=([\d.]+)", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--troupe", default=os.path.join(HERE, "..", "build", "apps", "troupe"))
    ap.add_argument("--models", default="mlp,lenet,resnet-20")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch-default-blas", action="store_true")
    ap.add_argument("--python", default="/usr/bin/python3", help="the Python whose PyTorch is timed")
    a = ap.parse_args()
    env = dict(os.environ)
    torch_env = dict(env)
    if not a.torch_default_blas:
        torch_env["OPENBLAS_NUM_THREADS"] = "1"
    common = ["--batch-size", str(a.batch_size), "--threads", str(a.threads)]
    print(f"PyTorch computes with {torch_blas.check(a.python, torch_env)}", flush=True)
    print(f"{'model':<10} {'troupe img/s':>14} {'pytorch img/s':>14} {'ratio':>7}   per-round ratios")
    for model in a.models.split(","):
        ours, theirs, ratios = [], [], []
        for _ in range(a.rounds):
            t = images_per_second([a.troupe, "bench", "--models", model] + common, env)
            p = images_per_second([a.python, os.path.join(HERE, "torch_peer.py"), model]
                                  + common, torch_env)
            ours.append(t)
            theirs.append(p)
            ratios.append(t / p)
        print(f"{model:<10} {statistics.median(ours):>14.1f} {statistics.median(theirs):>14.1f} "
              f"{statistics.median(ratios):>7.2f}   {' '.join(f'{r:.2f}' for r in ratios)}",
              flush=True)


if __name__ == "__main__":
    main()
