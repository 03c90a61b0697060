#!/usr/bin/env python3
"""Plots `troupe train --metrics FILE` outputs: one figure, one or more runs.

The x axis counts epochs trained and is ticked in whole epochs: an epoch record (Epoch[e] in the
log) is drawn at e + 1, where that epoch ends, and a step record (`--metrics-every N`) at its
epoch_progress. Progress rather than the step count, so that runs of different batch sizes or
worker counts line up epoch by epoch, and their validation points fall on their training curves.

Panels: accuracy and loss (train per step where the file has step records, else per epoch;
validation per epoch), samples/s and learning rate (per step where there are step records), and,
when the files carry them, each node's mean step time and wait per step (step records' `nodes`),
its traffic per epoch (`traffic`) and what the barriers waited for it per epoch (`waited_for`).

A colour is a run in the run panels and a node in the per-node panels (the same node the same
colour in every run; there each run has its own line style and marker). Train is dashed with
hollow circles, validation solid with filled squares; every point has a marker, so a run of one
epoch reads too. A run is labelled by LABEL=FILE, or by the file's name and the network its
config record names. Rows of older files (an integer epoch and no "record") are epoch records.

The output format follows the file name: .svg or .png. Needs Debian's python3-matplotlib
(scripts/setup.sh installs it); without it the script says so and exits 77, which the test
suite reads as "skipped". Tests import it and inspect figure_of's Figure.

usage: scripts/plot_metrics.py [LABEL=]METRICS.jsonl... -o FILE.svg|FILE.png
"""
import argparse
import collections
import json
import math
import os
import sys

MISSING_DEPENDENCY = 77
TRAIN = {"linestyle": "--", "marker": "o", "markerfacecolor": "none", "markersize": 7}
VALIDATION = {"linestyle": "-", "marker": "s", "markersize": 5}
RUN_STYLES = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ((0, (5, 1, 1, 1)), "v")]
MARKERS_PER_CURVE = 40  # beyond this a per-step curve marks every k-th point only

Run = collections.namedtuple("Run", "label epochs steps")
Run.__doc__ = "One metrics file: its label, epoch records by epoch, step records by progress."
Line = collections.namedtuple("Line", "index run node xs ys")
Line.__doc__ = "The points of the index-th run (and, in a per-node panel, of one node)."


class BadInput(Exception):
    """A metrics file that cannot be plotted; the message names the file and, where one line is
    at fault, the line."""


def is_number(value):
    """A finite int or float: JSON's NaN and Infinity (a diverged run's) cannot be drawn."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def record_kind(row, where):
    """"epoch", "step", or None for a line that is not plotted (the config record, a record
    kind this script does not draw)."""
    if not isinstance(row, dict):
        return None
    epoch_is_int = isinstance(row.get("epoch"), int) and not isinstance(row.get("epoch"), bool)
    kind = row.get("record", "epoch" if epoch_is_int else None)
    if kind == "epoch" and not epoch_is_int:
        raise BadInput(f"{where}: epoch record without an integer epoch")
    if kind == "step" and not is_number(row.get("epoch_progress")):
        raise BadInput(f"{where}: step record without a number for epoch_progress")
    return kind if kind in ("epoch", "step") else None


def read_run(path, label=None):
    """The Run of one metrics file; BadInput when it is unreadable, not JSON Lines or has no
    epoch or step record."""
    rows = {"epoch": [], "step": []}
    config = {}
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise BadInput(f"{path}:{number}: not JSON: {e.msg}")
                if isinstance(row, dict) and isinstance(row.get("config"), dict):
                    config = row["config"]
                kind = record_kind(row, f"{path}:{number}")
                if kind:
                    rows[kind].append(row)
    except OSError as e:
        raise BadInput(f"{path}: {e.strerror}")
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not text (a metrics file is JSON Lines)")
    if not rows["epoch"] and not rows["step"]:
        raise BadInput(f"{path}: no epoch or step records")
    if label is None:
        label = os.path.splitext(os.path.basename(path))[0]
        if isinstance(config.get("network"), str):
            label += f" ({config['network']})"
    return Run(label, sorted(rows["epoch"], key=lambda r: r["epoch"]),
               sorted(rows["step"], key=lambda r: r["epoch_progress"]))


def epoch_x(row):
    return row["epoch"] + 1


def step_x(row):
    return row["epoch_progress"]


def points(rows, x_of, value):
    """(xs, ys) of the rows for which value(row) is a number."""
    pairs = [(x_of(r), value(r)) for r in rows]
    pairs = [(x, y) for x, y in pairs if is_number(y)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def step_or_epoch(run, step_key, epoch_key):
    """The run's per-step series of step_key where its step records have one, else its
    per-epoch series of epoch_key."""
    xs, ys = points(run.steps, step_x, lambda r: r.get(step_key))
    return (xs, ys) if xs else points(run.epochs, epoch_x, lambda r: r.get(epoch_key))


def node_entry(key, node, value):
    """A function of a row: value() of its entry for `node` under `key`, None where it has none."""
    def entry(row):
        table = row.get(key)
        return value(table[node]) if isinstance(table, dict) and node in table else None
    return entry


def mebibytes(traffic):
    if not isinstance(traffic, dict):
        return None
    parts = [traffic.get(k, 0) for k in ("rx", "tx")]
    return sum(parts) / 2**20 if all(is_number(p) for p in parts) else None


def seconds(waited):
    """A barrier wait: a number of seconds, or the scheduler's {"seconds": s, "steps": n}."""
    return waited.get("seconds") if isinstance(waited, dict) else waited


def field(name):
    return lambda entry: entry.get(name) if isinstance(entry, dict) else None


# Per-node panels: title, unit, which records, their x, the per-node key, the figure of an entry.
NODE_PANELS = [
    ("step time per node", "seconds per step (mean)", "steps", step_x, "nodes", field("step_s")),
    ("waits per node", "seconds waited per step (mean)", "steps", step_x, "nodes", field("wait_s")),
    ("traffic per node (rx + tx)", "MiB per epoch", "epochs", epoch_x, "traffic", mebibytes),
    ("stragglers: what the barriers waited for", "seconds per epoch", "epochs", epoch_x,
     "waited_for", seconds),
]


def node_lines(runs, records, x_of, key, value):
    """The per-node lines of one panel, run by run, each run's nodes by name."""
    nodes = sorted({node for run in runs for row in getattr(run, records)
                    if isinstance(row.get(key), dict) for node in row[key]})
    lines = []
    for index, run in enumerate(runs):
        for node in nodes:
            xs, ys = points(getattr(run, records), x_of, node_entry(key, node, value))
            if xs:
                lines.append(Line(index, run, node, xs, ys))
    return lines


def run_lines(runs, step_key, epoch_key):
    return [Line(i, run, None, *step_or_epoch(run, step_key, epoch_key))
            for i, run in enumerate(runs)]


def validation_lines(runs, key):
    return [Line(i, run, None, *points(run.epochs, epoch_x, lambda r: r.get(key)))
            for i, run in enumerate(runs)]


def sparse(xs):
    return max(1, len(xs) // MARKERS_PER_CURVE)


def draw_train_validation(axis, runs, step_key, train_key, val_key):
    for colour, train, val in zip(run_colours(runs), run_lines(runs, step_key, train_key),
                                  validation_lines(runs, val_key)):
        if train.xs:
            axis.plot(train.xs, train.ys, color=colour, markevery=sparse(train.xs),
                      label=f"{train.run.label} train", **TRAIN)
        if val.xs:
            axis.plot(val.xs, val.ys, color=colour, label=f"{val.run.label} validation",
                      **VALIDATION)


def draw_per_run(axis, runs, key):
    for colour, line in zip(run_colours(runs), run_lines(runs, key, key)):
        if line.xs:
            axis.plot(line.xs, line.ys, "-", color=colour, marker="o", markersize=5,
                      markevery=sparse(line.xs), label=line.run.label)


def draw_per_node(axis, lines, nodes):
    """`nodes`: every node of the figure, so that a node has one colour in every panel.
    Identical figures (a bsp run's workers move the same bytes) still show every node: later
    nodes are drawn thinner and smaller on top of earlier ones."""
    colours = node_colours(len(nodes))
    for line in lines:
        n = nodes.index(line.node)
        linestyle, marker = RUN_STYLES[line.index % len(RUN_STYLES)]
        axis.plot(line.xs, line.ys, color=colours[n], linestyle=linestyle, marker=marker,
                  markersize=max(3, 9 - 2.5 * n), linewidth=max(0.8, 2.2 - 0.5 * n),
                  markevery=sparse(line.xs), zorder=2 + n, label=f"{line.run.label} {line.node}")


def run_colours(runs):
    return [f"C{i % 10}" for i in range(len(runs))]


def node_colours(count):
    """Qualitative colours apart from the runs' (tab10): Dark2 up to 8 nodes, tab20 beyond."""
    from matplotlib import colormaps
    palette = colormaps["Dark2" if count <= 8 else "tab20"].colors
    return [palette[i % len(palette)] for i in range(count)]


def panels_of(runs):
    """(title, unit, draw(axis)) of each panel the runs have data for, top to bottom."""
    panels = [
        ("accuracy", "fraction correct",
         lambda a: draw_train_validation(a, runs, "accuracy", "train_accuracy", "val_accuracy")),
        ("cross-entropy loss", "mean per sample",
         lambda a: draw_train_validation(a, runs, "loss", "train_loss", "val_loss")),
        ("training speed", "samples/s", lambda a: draw_per_run(a, runs, "samples_per_s")),
        ("learning rate", "per step, or at the epoch's end",
         lambda a: draw_per_run(a, runs, "learning_rate")),
    ]
    per_node = [(title, unit, node_lines(runs, *spec)) for title, unit, *spec in NODE_PANELS]
    nodes = sorted({line.node for _, _, lines in per_node for line in lines})
    for title, unit, lines in per_node:
        if lines:
            panels.append((title, unit, lambda a, l=lines: draw_per_node(a, l, nodes)))
    return panels


def epoch_span(runs):
    """(first, last): the epoch boundaries around every point of the runs."""
    starts = [r["epoch"] for run in runs for r in run.epochs]
    starts += [math.floor(r["epoch_progress"]) for run in runs for r in run.steps]
    ends = [epoch_x(r) for run in runs for r in run.epochs]
    ends += [step_x(r) for run in runs for r in run.steps]
    return min(starts), max(math.ceil(max(ends)), min(starts) + 1)


def figure_of(runs):
    """The matplotlib Figure of the runs: one column of panels sharing the epoch axis."""
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    panels = panels_of(runs)
    figure = Figure(figsize=(11, 3 * len(panels)))  # 8 inches of plot, 3 of legend
    axes = figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for axis, (title, unit, draw) in zip(axes, panels):
        draw(axis)
        axis.set_title(title)
        axis.set_ylabel(unit)
        axis.grid(True, alpha=0.3)
        axis.tick_params(labelbottom=True)  # each panel's epochs read without the bottom one
        if axis.get_legend_handles_labels()[0]:
            # beside the plot: per-step curves and per-node lines leave no corner free
            axis.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    first, last = epoch_span(runs)
    pad = 0.03 * (last - first)
    axes[-1].set_xlim(first - pad, last + pad)
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1].set_xlabel("epochs trained (epoch e's record at e + 1, where it ends)")
    figure.tight_layout()
    return figure


def main(argv):
    parser = argparse.ArgumentParser(
        prog="plot_metrics.py",
        description="Plot accuracy, loss, samples/s, learning rate, and per node step times, "
                    "waits and traffic, of one or more troupe metrics files.")
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
        try:
            runs.append(read_run(path, label) if sep else read_run(arg))
        except BadInput as e:
            sys.exit(f"plot_metrics: {e}")
    try:
        import matplotlib  # noqa: F401  (checked before any work that needs it)
    except ImportError:
        print("plot_metrics: needs matplotlib (Debian: apt-get install python3-matplotlib, "
              "or scripts/setup.sh)", file=sys.stderr)
        return MISSING_DEPENDENCY
    figure_of(runs).savefig(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
