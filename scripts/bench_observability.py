#!/usr/bin/env python3
"""What watching a run costs: the status server (scraped as Prometheus and an open live page
would) and the timeline, against the same run without them, on a LeNet epoch.

Each pair runs `troupe train --network lenet --num-epochs 1` twice, once plain and once with
`--status-listen 127.0.0.1:0 --timeline FILE` while a thread of this script reads /metrics and
/status every second and the page once. The pairs alternate their order (plain first, then
watched first, ...) so that a machine getting slower or faster during the bench weighs on both
alike. From each run: the epoch's training seconds (its metrics record's `time_s`), the
process's wall seconds and its CPU seconds (user + system, from the kernel's accounting of the
finished child). The cost is the median over the pairs of watched / plain - 1, with the range.

usage: scripts/bench_observability.py [--troupe build/apps/troupe] [--pairs 6] [--threads 2]
                                      [--network lenet] [--results docs/results.jsonl]

With --results the figures are appended to that results file (scripts/results_page.py then
writes them into docs/benchmarks.md).
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
STATUS_LINE = re.compile(r"Status: (http://[^/\s]+/)")


class Poller(threading.Thread):
    """Reads the run's stdout; once it names its status address, GETs /metrics and /status every
    second (and / once) until the run ends. Counts what it read."""

    def __init__(self, proc):
        super().__init__(daemon=True)
        self.proc, self.scrapes, self.failures = proc, 0, 0
        self.base = None

    def run(self):
        for line in self.proc.stdout:
            m = STATUS_LINE.search(line)
            if m and self.base is None:
                self.base = m.group(1)
                threading.Thread(target=self.scrape, daemon=True).start()

    def scrape(self):
        paths = ["", "metrics", "status"]
        while self.proc.poll() is None:
            for path in paths:
                try:
                    with urllib.request.urlopen(self.base + path, timeout=5) as r:
                        r.read()
                    self.scrapes += 1
                except OSError:
                    self.failures += self.proc.poll() is None
            paths = ["metrics", "status"]
            time.sleep(1.0)


def run_once(troupe, flags, watched, folder):
    metrics = os.path.join(folder, "metrics.jsonl")
    command = [troupe, "train"] + flags + ["--metrics", metrics]
    if watched:
        command += ["--status-listen", "127.0.0.1:0", "--timeline", os.path.join(folder, "timeline.json")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    poller = Poller(proc)
    poller.start()
    code = proc.wait(timeout=3600)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    poller.join(timeout=10)
    if code != 0:
        raise SystemExit(f"{' '.join(command)} exited {code}")
    if watched and poller.scrapes == 0:
        raise SystemExit("the watched run served nothing: no `Status:` line or no answer")
    epochs = [json.loads(l) for l in open(metrics) if '"record":"epoch"' in l]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"train_s": epochs[0]["time_s"], "wall_s": wall, "cpu_s": cpu, "scrapes": poller.scrapes,
            "failures": poller.failures}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--troupe", default=os.path.join(HERE, "..", "build", "apps", "troupe"))
    p.add_argument("--pairs", type=int, default=6)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--network", default="lenet")
    p.add_argument("--results")
    a = p.parse_args()
    flags = ["--network", a.network, "--num-epochs", "1", "--threads", str(a.threads), "--progress", "off",
             "--disp-batches", "0"]
    runs = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="troupe-observability-") as folder:
        for pair in range(a.pairs):
            for watched in ((False, True) if pair % 2 == 0 else (True, False)):
                r = run_once(a.troupe, flags, watched, folder)
                runs[watched].append(r)
                print(f"pair {pair} {'watched' if watched else 'plain  '}: train {r['train_s']:.2f} s, "
                      f"wall {r['wall_s']:.2f} s, cpu {r['cpu_s']:.2f} s"
                      + (f", {r['scrapes']} answers read" if watched else ""), flush=True)
    figures = {}
    for key in ("train_s", "wall_s", "cpu_s"):
        ratios = [w[key] / b[key] for w, b in zip(runs[True], runs[False])]
        figures[key] = (statistics.median(ratios) - 1, min(ratios) - 1, max(ratios) - 1)
        print(f"{key}: watched/plain - 1 = {100 * figures[key][0]:+.2f}% (median of {a.pairs} pairs, "
              f"range {100 * figures[key][1]:+.2f}% to {100 * figures[key][2]:+.2f}%); plain median "
              f"{statistics.median(r[key] for r in runs[False]):.2f} s")
    scrapes = sum(r["scrapes"] for r in runs[True])
    failures = sum(r["failures"] for r in runs[True])
    print(f"{scrapes} answers read from the status servers, {failures} failed")
    if a.results:
        sys.path.insert(0, HERE)
        import results_page
        command = f"scripts/bench_observability.py --pairs {a.pairs} --threads {a.threads} --network {a.network}"
        what = {"train_s": "the epoch's training time", "wall_s": "the process's wall time",
                "cpu_s": "the process's CPU time (user + system)"}
        records = []
        for key, (median, low, high) in figures.items():
            records.append({
                "id": f"observability/{a.network}/{key}", "group": "observability",
                "figure": f"{a.network}, 1 epoch, "
                          f"--threads {a.threads}: status server (scraped every second) and timeline "
                          f"on, cost in {what[key]}",
                "value": round(100 * median, 2), "unit": "%",
                "detail": f"median of {a.pairs} interleaved pairs, range {100 * low:+.2f}% to {100 * high:+.2f}%; "
                          f"plain median {statistics.median(r[key] for r in runs[False]):.2f} s; goal at most 1%",
                "command": command, "source": "the bench's output",
                **({"machine": os.environ["TROUPE_MACHINE"]} if os.environ.get("TROUPE_MACHINE") else {})})
        results_page.append_records(a.results, records)


if __name__ == "__main__":
    main()
