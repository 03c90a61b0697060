"""A real Prometheus server (Debian's `prometheus`) scrapes a running `troupe train`'s /metrics:
its HTTP query API must return the job's per-rank samples/s series with values above zero, and
`promtool check metrics` must accept the exposition as Troupe writes it.

usage: prometheus_scrape.py TROUPE CONFIG WORKDIR    (exit 77 without prometheus/promtool)
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from status_run import SKIP, StatusRun, child_process, fail


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(base, expression):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    with urllib.request.urlopen(url, timeout=10) as r:
        answer = json.loads(r.read().decode())
    if answer.get("status") != "success":
        fail(f"Prometheus refused the query {expression}: {answer}")
    return answer["data"]["result"]


def main(troupe, config, workdir):
    if not shutil.which("prometheus") or not shutil.which("promtool"):
        print("skipped: no prometheus or promtool (apt install prometheus)")
        return SKIP
    os.makedirs(workdir, exist_ok=True)
    with StatusRun([troupe, "train", "--config", config, "--network", "mlp", "--num-epochs", "1000",
                    "--progress", "off", "--disp-batches", "0", "--status-listen", "0"], workdir) as run:
        url = run.wait_for_url()
        run.wait_until("a training batch", lambda s: s["position"]["step"] > 0)
        exposition = run.get("metrics")
        check = subprocess.run(["promtool", "check", "metrics"], input=exposition, text=True,
                               capture_output=True, timeout=60)
        if check.returncode != 0:
            fail(f"promtool check metrics refused the exposition:\n{check.stdout}{check.stderr}")
        target = urllib.parse.urlparse(url).netloc
        port = free_port()
        with open(os.path.join(workdir, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: troupe\n"
                    f"    static_configs:\n      - targets: ['{target}']\n")
        server = child_process.start(
            ["prometheus", "--config.file=" + os.path.join(workdir, "prometheus.yml"),
             "--storage.tsdb.path=" + os.path.join(workdir, "data"),
             f"--web.listen-address=127.0.0.1:{port}"],
            out=os.path.join(workdir, "prometheus.out"), err=subprocess.STDOUT, cwd=workdir)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.time() + 90
            series = []
            while time.time() < deadline:
                if server.poll() is not None:
                    with open(os.path.join(workdir, "prometheus.out")) as f:
                        fail("prometheus ended: " + f.read()[-2000:])
                try:
                    series = query(base, "troupe_rank_samples_per_second")
                except OSError:
                    series = []  # not listening yet
                if series and all(float(s["value"][1]) > 0 for s in series):
                    break
                time.sleep(0.2)
            else:
                fail(f"no troupe_rank_samples_per_second series above 0 within 90 s: {series}")
            ranks = sorted(s["metric"]["rank"] for s in series)
            workers = run.status()["plan"]["workers"]
            if ranks != sorted(str(r) for r in range(workers)):
                fail(f"the series' ranks {ranks} are not the run's {workers} computes")
            for s in series:
                if s["metric"].get("job") != "troupe" or s["metric"].get("node") != "process":
                    fail(f"a series without the scrape's job or the process's node: {s['metric']}")
            up = query(base, 'up{job="troupe"}')
            if not up or up[0]["value"][1] != "1":
                fail(f"Prometheus does not see the target up: {up}")
            print(f"ok: Prometheus scraped {target}: {len(series)} samples/s series "
                  f"({', '.join(s['value'][1] for s in series)}), promtool accepts the exposition")
        finally:
            child_process.end(server)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
