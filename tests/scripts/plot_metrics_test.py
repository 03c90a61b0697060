#!/usr/bin/env python3
"""Tests of scripts/plot_metrics.py on synthetic metrics files (1 and 3 epochs, with and without
step records, 2 runs, 3 nodes), read through the matplotlib Figure that figure_of returns.

usage: plot_metrics_test.py ticks|colours|train_validation|panels|bad_input

  ticks             the epoch axis is ticked in whole epochs and spans every epoch, 1 and 3 of them
  colours           in a per-node panel each node of a run has a colour of its own, the same in
                    every run and panel, and the runs differ in line style and marker
  train_validation  train and validation differ in line style and marker, are named so in the
                    legend, and have markers (one epoch is one point each); step records make the
                    train curve per step, with validation at the epochs' ends
  panels            which panels the data brings (per-step node times and waits, traffic, barrier
                    waits), their legends naming runs and nodes; old rows without "record" are
                    epoch records; a NaN figure is left out; two runs write an SVG and a PNG
  bad_input         exit 1 naming file and line for a line that is not JSON, a step record without
                    (or with a NaN) epoch_progress, an epoch record without an integer epoch; a
                    file that is not text, that has no records, that is missing; exit 2 for -o
                    without .svg/.png; 77 without matplotlib

Runs under an interpreter with matplotlib: this one, else Debian's /usr/bin/python3 (what
scripts/setup.sh installs python3-matplotlib for); skipped (77) when neither has it.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "plot_metrics.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import plot_metrics as pm  # noqa: E402

NODES = ["server0", "worker0", "worker1"]
WORK = tempfile.mkdtemp(prefix="troupe_plot_test_")


def fail(why):
    print(f"FAIL: {why}")
    raise SystemExit(1)


def epoch_record(epoch, old=False):
    row = {"epoch": epoch, "train_accuracy": 0.5 + 0.1 * epoch, "val_accuracy": 0.45 + 0.1 * epoch,
           "train_loss": 1.0 / (epoch + 1), "val_loss": 1.1 / (epoch + 1), "learning_rate": 0.1,
           "samples_per_s": 1000.0 + epoch, "time_s": 2.0}
    if not old:
        row.update({"record": "epoch", "time": 1.8e9 + 10 * epoch,
                    # bsp workers move the same bytes: their lines lie on each other
                    "traffic": {n: {"rx": 3 << 20 if n == "server0" else 1 << 20, "tx": 1 << 20}
                                for n in NODES},
                    "waited_for": {"worker1": {"seconds": 1.5, "steps": 40}, "worker0": 0.25}})
    return row


def step_records(epoch, per_epoch):
    for k in range(1, per_epoch + 1):
        yield {"record": "step", "step": epoch * per_epoch + k, "epoch": epoch,
               "epoch_progress": epoch + k / per_epoch, "time": 1.8e9 + 10 * epoch + k,
               "loss": 1.0 / (epoch + k / per_epoch + 1), "accuracy": 0.5 + 0.02 * k,
               "learning_rate": 0.1 * (1 - (epoch + k / per_epoch) / 4),
               "samples_per_s": 900.0 + 20 * math.sin(k),
               "nodes": {n: {"step_s": 0.05 * (i + 1), "wait_s": 0.01 * i}
                         for i, n in enumerate(NODES[1:])}}


def metrics_file(name, epochs, steps_per_epoch=0, old=False, lines=None):
    """A metrics file as the trainer writes it (or, old=True, as it wrote them before records
    had a kind); `lines` replaces the content with these lines."""
    path = os.path.join(WORK, name)
    if lines is None:
        rows = [{"config": {"network": "mlp", "argv": ["troupe", "train"]}}]
        for epoch in range(epochs):
            rows += list(step_records(epoch, steps_per_epoch))
            rows.append(epoch_record(epoch, old))
        lines = [json.dumps(r) for r in rows]
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    return path


def panel(figure, title):
    for axis in figure.axes:
        if axis.get_title() == title:
            return axis
    fail(f"no panel '{title}' among {[a.get_title() for a in figure.axes]}")


def labelled(axis):
    return {line.get_label(): line for line in axis.get_lines()}


def check_ticks():
    for epochs, steps, expected in ((1, 0, [0, 1]), (1, 4, [0, 1]), (3, 0, [0, 1, 2, 3]),
                                    (3, 5, [0, 1, 2, 3])):
        figure = pm.figure_of([pm.read_run(metrics_file("t.jsonl", epochs, steps))])
        for axis in figure.axes:
            low, high = axis.get_xlim()
            ticks = [t for t in axis.get_xticks() if low <= t <= high]
            if ticks != expected:
                fail(f"{epochs} epoch(s), {steps} steps each: '{axis.get_title()}' ticks {ticks}")
    print("ok: ticks: whole epochs 0..1 and 0..3, with and without step records")


def check_colours():
    runs = [pm.read_run(metrics_file("a.jsonl", 3, 4)), pm.read_run(metrics_file("b.jsonl", 3))]
    figure = pm.figure_of(runs)
    for title in ("traffic per node (rx + tx)", "stragglers: what the barriers waited for",
                  "step time per node"):
        lines = labelled(panel(figure, title))
        # b has no step records, so no line in the step time panel
        for run in runs if title != "step time per node" else runs[:1]:
            mine = {label: line for label, line in lines.items()
                    if label.startswith(run.label + " ")}
            colours = [str(line.get_color()) for line in mine.values()]
            if len(mine) < 2 or len(set(colours)) != len(colours):
                fail(f"'{title}': {run.label}'s nodes {list(mine)} in colours {colours}")
        shared = [n for n in NODES if f"a (mlp) {n}" in lines and f"b (mlp) {n}" in lines]
        for node in shared:
            a, b = lines[f"a (mlp) {node}"], lines[f"b (mlp) {node}"]
            if a.get_color() != b.get_color():
                fail(f"'{title}': {node} is {a.get_color()} in a, {b.get_color()} in b")
            if (a.get_linestyle(), a.get_marker()) == (b.get_linestyle(), b.get_marker()):
                fail(f"'{title}': runs a and b drawn alike for {node}")
    colour_of = {}
    for axis in figure.axes[4:]:
        for label, line in labelled(axis).items():
            node = label.split()[-1]
            if colour_of.setdefault(node, line.get_color()) != line.get_color():
                fail(f"{node} is {colour_of[node]} in one panel, {line.get_color()} in "
                     f"'{axis.get_title()}'")
    print("ok: colours: a colour per node, the same across runs and panels, a style per run")


def check_train_validation():
    for epochs, steps in ((1, 0), (3, 0), (3, 6)):
        figure = pm.figure_of([pm.read_run(metrics_file("tv.jsonl", epochs, steps))])
        for title in ("accuracy", "cross-entropy loss"):
            axis = panel(figure, title)
            lines = labelled(axis)
            train, val = lines.get("tv (mlp) train"), lines.get("tv (mlp) validation")
            if not train or not val:
                fail(f"'{title}' has {list(lines)}, not train and validation")
            style = (train.get_linestyle(), train.get_marker())
            if style[0] == val.get_linestyle() or style[1] == val.get_marker():
                fail(f"'{title}': train {style}, validation "
                     f"{val.get_linestyle()} {val.get_marker()}")
            if "None" in (train.get_marker(), val.get_marker()):
                fail(f"'{title}': a line without markers")
            legend = [t.get_text() for t in axis.get_legend().get_texts()]
            if legend != ["tv (mlp) train", "tv (mlp) validation"]:
                fail(f"'{title}' legend {legend}")
            if list(val.get_xdata()) != list(range(1, epochs + 1)):
                fail(f"'{title}': validation at {list(val.get_xdata())}")
            want = [e + k / steps for e in range(epochs) for k in range(1, steps + 1)]
            want = want or list(range(1, epochs + 1))
            if list(train.get_xdata()) != want:
                fail(f"'{title}': train at {list(train.get_xdata())}, not {want}")
    print("ok: train_validation: styles, markers and legend apart; per step with step records")


def check_panels():
    base = ["accuracy", "cross-entropy loss", "training speed", "learning rate"]
    steps = ["step time per node", "waits per node"]
    epochs = ["traffic per node (rx + tx)", "stragglers: what the barriers waited for"]
    for path, want in ((metrics_file("old.jsonl", 2, old=True), base),
                       (metrics_file("e.jsonl", 2), base + epochs),
                       (metrics_file("s.jsonl", 2, 3), base + steps + epochs)):
        figure = pm.figure_of([pm.read_run(path)])
        got = [a.get_title() for a in figure.axes]
        if got != want:
            fail(f"{os.path.basename(path)}: panels {got}, not {want}")
    old = pm.read_run(metrics_file("old.jsonl", 2, old=True), "old")
    if [r["epoch"] for r in old.epochs] != [0, 1] or old.steps:
        fail(f"old rows read as {old}")
    lines = [json.dumps(r) for r in step_records(0, 3)]
    lines[1] = lines[1].replace('"loss": ', '"loss": NaN, "was": ')
    diverged = pm.figure_of([pm.read_run(metrics_file("nan.jsonl", 0, lines=lines), "nan")])
    drawn = labelled(panel(diverged, "cross-entropy loss"))["nan train"].get_xdata()
    if list(drawn) != [1 / 3, 1]:
        fail(f"a NaN loss drawn: the loss at {list(drawn)}")
    runs = [pm.read_run(metrics_file("a.jsonl", 2, 3)),
            pm.read_run(metrics_file("b.jsonl", 2), "b")]
    figure = pm.figure_of(runs)
    traffic = panel(figure, "traffic per node (rx + tx)")
    legend = [t.get_text() for t in traffic.get_legend().get_texts()]
    if legend != [f"{run} {node}" for run in ("a (mlp)", "b") for node in NODES]:
        fail(f"traffic legend {legend}")
    legend = [t.get_text() for t in panel(figure, "waits per node").get_legend().get_texts()]
    if legend != ["a (mlp) worker0", "a (mlp) worker1"]:
        fail(f"waits legend {legend}")
    for output in ("both.svg", "both.png"):
        out = os.path.join(WORK, output)
        done = run_script("a=" + os.path.join(WORK, "a.jsonl"), os.path.join(WORK, "b.jsonl"),
                          "-o", out)
        if done.returncode != 0 or os.path.getsize(out) == 0:
            fail(f"{output}: exit {done.returncode}: {done.stderr}")
    print("ok: panels: as the data has them, legends naming runs and nodes, svg and png written")


def run_script(*args, python_code=None):
    command = [sys.executable, SCRIPT, *args] if python_code is None else \
        [sys.executable, "-c", python_code, SCRIPT, *args]
    return subprocess.run(command, capture_output=True, text=True)


def refused(args, code, says):
    done = run_script(*args)
    if done.returncode != code or says not in done.stderr:
        fail(f"{args}: exit {done.returncode}, '{done.stderr.strip()}', not {code} naming '{says}'")


def check_bad_input():
    out = os.path.join(WORK, "x.svg")
    cases = [
        (["{\"epoch\": 0}", "not json"], "bad.jsonl:2: not JSON"),
        (["{\"config\": {}}", "{\"record\": \"epoch\", \"epoch\": 0}",
          "{\"record\": \"step\", \"step\": 1, \"epoch\": 0}"],
         "bad.jsonl:3: step record without a number for epoch_progress"),
        (["{\"record\": \"step\", \"epoch\": 0, \"epoch_progress\": NaN}"],
         "bad.jsonl:1: step record without a number for epoch_progress"),
        (["{\"record\": \"epoch\", \"epoch\": \"0\"}"],
         "bad.jsonl:1: epoch record without an integer"),
        (["{\"config\": {}}", "{\"record\": \"event\"}", "[1, 2]"],
         "bad.jsonl: no epoch or step records"),
    ]
    for lines, says in cases:
        refused([metrics_file("bad.jsonl", 0, lines=lines), "-o", out], 1, says)
    binary = os.path.join(WORK, "binary.jsonl")
    with open(binary, "wb") as f:
        f.write(b"\xff\xfe\x00\x81")
    refused([binary, "-o", out], 1, "binary.jsonl: not text")
    refused([os.path.join(WORK, "missing.jsonl"), "-o", out], 1, "missing.jsonl: No such file")
    good = metrics_file("good.jsonl", 1)
    refused([good, "-o", os.path.join(WORK, "x.pdf")], 2, "must end in .svg or .png")
    without = ("import runpy, sys; sys.modules['matplotlib'] = None; sys.argv = sys.argv[1:]; "
               "runpy.run_path(sys.argv[0], run_name='__main__')")
    done = run_script(good, "-o", out, python_code=without)
    if done.returncode != pm.MISSING_DEPENDENCY or "needs matplotlib" not in done.stderr:
        fail(f"without matplotlib: exit {done.returncode}, '{done.stderr.strip()}'")
    print("ok: bad_input: refusals name file and line, 2 for the output's name, "
          "77 without matplotlib")


def with_matplotlib():
    """Re-runs this test under Debian's interpreter when this one has no matplotlib."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    debian = "/usr/bin/python3"
    if sys.executable != debian and os.path.exists(debian) and subprocess.run(
            [debian, "-c", "import matplotlib"], capture_output=True).returncode == 0:
        os.execv(debian, [debian, os.path.abspath(__file__), *sys.argv[1:]])
    print("skipped: no python3 with matplotlib (apt-get install python3-matplotlib)")
    raise SystemExit(77)


def main():
    parts = {"ticks": check_ticks, "colours": check_colours,
             "train_validation": check_train_validation, "panels": check_panels,
             "bad_input": check_bad_input}
    if len(sys.argv) != 2 or sys.argv[1] not in parts:
        raise SystemExit(__doc__)
    with_matplotlib()
    parts[sys.argv[1]]()
    shutil.rmtree(WORK, ignore_errors=True)  # kept when a check fails


if __name__ == "__main__":
    main()
