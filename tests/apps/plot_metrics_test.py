#!/usr/bin/env python3
"""scripts/plot_metrics.py on two real runs' metrics: the SVG must parse as XML with an <svg>
root, the PNG must start with the PNG signature and an IHDR chunk whose size is the figure's;
a cluster-style `traffic` object adds the traffic panel, a `waited_for` object the stragglers'
panel. Exits 77 (skipped) without matplotlib.

usage: plot_metrics_test.py TROUPE_BINARY SCRIPTS_DIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

troupe, scripts = sys.argv[1], sys.argv[2]


def with_matplotlib():
    """This interpreter, or Debian's (what scripts/setup.sh installs python3-matplotlib for)
    when this one is another (a virtualenv, pyenv) without it."""
    for python in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(python) and subprocess.run([python, "-c", "import matplotlib"],
                                                     capture_output=True).returncode == 0:
            return python
    return sys.executable  # the script itself then reports the missing module (77)


python = with_matplotlib()
plot = os.path.join(scripts, "plot_metrics.py")
work = tempfile.mkdtemp(prefix="troupe_plot_")


def train(name, lr):
    path = os.path.join(work, name + ".jsonl")
    subprocess.run([troupe, "train", "--network", "mlp", "--dataset", "synthetic",
                    "--image-shape", "1,8,8", "--num-examples", "384", "--num-epochs", "2",
                    "--batch-size", "32", "--lr", str(lr), "--progress", "off",
                    "--metrics", path], check=True, stdout=subprocess.DEVNULL)
    return path


runs = [train("a", 0.05), train("b", 0.02)]
# A cluster run's scheduler writes a traffic object per node into each epoch's line.
rows = [json.loads(line) for line in open(runs[1])]
with open(runs[1], "w") as f:
    for row in rows:
        if "epoch" in row:
            row["traffic"] = {"server0": {"rx": 3 << 20, "tx": 1 << 20},
                              "worker0": {"rx": 1 << 20, "tx": 3 << 20}}
            row["waited_for"] = {"worker_7": {"seconds": 1.5, "steps": 40}}
        f.write(json.dumps(row) + "\n")

svg, png = os.path.join(work, "runs.svg"), os.path.join(work, "runs.png")
for output in (svg, png):
    done = subprocess.run([python, plot, "fast=" + runs[0], "slow=" + runs[1], "-o", output],
                          capture_output=True, text=True)
    if done.returncode == 77:
        print("skipped: " + done.stderr.strip())
        sys.exit(77)
    assert done.returncode == 0, f"plot_metrics exited {done.returncode}: {done.stderr}"

root = ET.parse(svg).getroot()
assert root.tag.endswith("svg"), root.tag
svg_bytes = open(svg).read()
for label in ("fast", "slow", "server0", "worker0", "worker_7", "stragglers"):
    assert label in svg_bytes, f"{label} not in the SVG"

data = open(png, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
length, kind = struct.unpack(">I4s", data[8:16])
assert kind == b"IHDR" and length == 13, (kind, length)
width, height = struct.unpack(">II", data[16:24])
# 11 x 3 inches per panel (legends beside the plots) at matplotlib's default 100 dpi, six panels
# with traffic and waits.
assert (width, height) == (1100, 1800), (width, height)

# A file that is not metrics is refused with its name and line, not a traceback.
bad = os.path.join(work, "bad.jsonl")
open(bad, "w").write("{\"epoch\": 0}\nnot json\n")
done = subprocess.run([python, plot, bad, "-o", os.path.join(work, "x.svg")],
                      capture_output=True, text=True)
assert done.returncode != 0 and "bad.jsonl:2" in done.stderr, done.stderr
shutil.rmtree(work, ignore_errors=True)  # kept when an assertion above fails
print("ok: svg and png of two runs, traffic and stragglers' panels present")
