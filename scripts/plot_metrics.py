#!/usr/bin/env python3
"""Plots `troupe train --metrics FILE` outputs: one figure, several runs.

Panels: accuracy per epoch (train dashed, validation solid), loss per epoch, samples/s per
epoch, learning rate per epoch, and, when the files carry a `traffic` object (cluster runs
write one per node and epoch), bytes received and sent per node and epoch; and when they carry
a `waited_for` object (cluster runs whose barriers waited for a straggler), the seconds the
barriers waited for each node per epoch. Each run is one
colour across all panels and is labelled by LABEL=FILE, or by the file's name.

The output format follows the file name: .svg or .png. Needs Debian's python3-matplotlib
(scripts/setup.sh installs it); without it the script says so and exits 77, which the test
suite reads as "skipped".

usage: scripts/plot_metrics.py [LABEL=]METRICS.jsonl... -o FILE.svg|FILE.png
"""
import argparse
import json
import os
import sys

MISSING_DEPENDENCY = 77


def read_run(path):
    """The epoch records of one metrics file, in epoch order (the configuration record and
    anything else without an epoch number is not plotted)."""
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot_metrics: {path}:{number}: not JSON: {e.msg}")
            if isinstance(row, dict) and isinstance(row.get("epoch"), int):
                rows.append(row)
    if not rows:
        sys.exit(f"plot_metrics: {path}: no epoch records")
    return sorted(rows, key=lambda r: r["epoch"])


def series(rows, key):
    """(epochs, values) of the rows that have `key` as a number."""
    pairs = [(r["epoch"], r[key]) for r in rows if isinstance(r.get(key), (int, float))]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def nodes_in(runs, key):
    """The node names of the per-node objects under `key` (traffic, waited_for) in any run."""
    nodes = set()
    for _, rows in runs:
        for r in rows:
            if isinstance(r.get(key), dict):
                nodes.update(r[key].keys())
    return sorted(nodes)


def plot_per_node(axis, runs, colours, nodes, key, value, title, unit):
    """One line per run and node: value(the node's object under `key`) by epoch."""
    styles = ["-", "--", ":", "-."]
    for (label, rows), colour in zip(runs, colours):
        for i, node in enumerate(nodes):
            points = [(r["epoch"], value(r[key][node])) for r in rows
                      if isinstance(r.get(key), dict) and node in r[key]]
            if points:
                axis.plot([p[0] for p in points], [p[1] for p in points], styles[i % len(styles)], color=colour,
                          marker="o", label=f"{label} {node}")
    axis.set_title(title)
    axis.set_ylabel(unit)


def plot(runs, output):
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    nodes = nodes_in(runs, "traffic")
    waited = nodes_in(runs, "waited_for")
    panels = 4 + (1 if nodes else 0) + (1 if waited else 0)
    figure, axes = plt.subplots(panels, 1, figsize=(8, 3 * panels), sharex=True)
    colours = [f"C{i % 10}" for i in range(len(runs))]
    for (label, rows), colour in zip(runs, colours):
        for key, style, suffix in (("train_accuracy", "--", " train"), ("val_accuracy", "-", " val")):
            x, y = series(rows, key)
            if x:
                axes[0].plot(x, y, style, color=colour, marker="o", label=label + suffix)
        for key, style, suffix in (("train_loss", "--", " train"), ("val_loss", "-", " val")):
            x, y = series(rows, key)
            if x:
                axes[1].plot(x, y, style, color=colour, marker="o", label=label + suffix)
        for axis, key in ((axes[2], "samples_per_s"), (axes[3], "learning_rate")):
            x, y = series(rows, key)
            if x:
                axis.plot(x, y, "-", color=colour, marker="o", label=label)
    titles = [("accuracy", "fraction correct"), ("cross-entropy loss", "mean per sample"),
              ("training speed", "samples/s"), ("learning rate", "at the epoch's last step")]
    for axis, (title, unit) in zip(axes, titles):
        axis.set_title(title)
        axis.set_ylabel(unit)
    if nodes:
        plot_per_node(axes[4], runs, colours, nodes, "traffic", lambda t: (t.get("rx", 0) + t.get("tx", 0)) / 2**20,
                      "traffic per node (rx + tx)", "MiB per epoch")
    if waited:
        plot_per_node(axes[5 if nodes else 4], runs, colours, waited, "waited_for", lambda w: w.get("seconds", 0),
                      "stragglers: what the barriers waited for", "seconds per epoch")
    for axis in axes:
        axis.grid(True, alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize="small")
    axes[-1].set_xlabel("epoch")
    figure.tight_layout()
    figure.savefig(output)


def main(argv):
    parser = argparse.ArgumentParser(
        prog="plot_metrics.py",
        description="Plot accuracy, loss, samples/s, learning rate and traffic per epoch "
                    "of one or more troupe metrics files.")
    parser.add_argument("runs", nargs="+", metavar="[LABEL=]FILE", help="a --metrics JSONL file")
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="the chart: FILE.svg or FILE.png")
    args = parser.parse_args(argv)
    extension = os.path.splitext(args.output)[1].lower()
    if extension not in (".svg", ".png"):
        parser.error(f"-o {args.output}: the file name must end in .svg or .png")
    runs = []
    for arg in args.runs:
        label, sep, path = arg.partition("=")
        if not sep:
            label, path = os.path.splitext(os.path.basename(arg))[0], arg
        try:
            runs.append((label, read_run(path)))
        except OSError as e:
            sys.exit(f"plot_metrics: {path}: {e.strerror}")
    try:
        import matplotlib  # noqa: F401  (checked before any work that needs it)
    except ImportError:
        print("plot_metrics: needs matplotlib (Debian: apt-get install python3-matplotlib, "
              "or scripts/setup.sh)", file=sys.stderr)
        return MISSING_DEPENDENCY
    plot(runs, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
