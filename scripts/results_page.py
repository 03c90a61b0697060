#!/usr/bin/env python3
"""The results page: docs/benchmarks.md's tables and README's figures, made from the results file.

usage: scripts/results_page.py [--results docs/results.jsonl] [--page docs/benchmarks.md]
                               [--readme README.md] [--check]

The results file (docs/results.jsonl) holds one JSON object per line, one figure each:
  id        a stable name ("scaling/resnet-50/1gbit/400ms/equal/2w"); a later line with the same id
            replaces an earlier one, so a bench appends its new figures and the file keeps the history
  group     the page's table it belongs in (the `<!-- results: GROUP -->` markers)
  figure    what was measured, in words
  value     a number, [low, high] for a range, or null where a mark says why there is none
  unit, detail, mark   how to read it
  command   the command that measured it; date (UTC), commit and machine where it ran ("not recorded"
            where the record that the figure came from does not say)
  source    where the figure came from (a bench's --results, or the notebook's section)
Records of group "machine" describe a machine named by the others' `machine` field.

Every block between `<!-- results: GROUP -->` and `<!-- /results -->` in the page is rewritten
from the records of that group, and README.md's `<!-- results: readme -->` block from the
sentences in readme_summary(), which name the records they quote. So a figure is written once,
in the results file, and the page and README cannot say otherwise: --check rewrites nothing and
exits 1, naming the file and the first line that differs, when either is not what this script
would write (tests/scripts/results_page_test.py runs it).

Benches append with append_records() (bench_scaling.py --results FILE does).
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import textwrap

# The real path: run through a symbolic link to scripts/ (an installed prefix, a test's work folder),
# the results file and the page are still the checkout's.
HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.dirname(HERE)
BLOCK = re.compile(r"(<!-- results: ([\w-]+) -->\n)(.*?)(<!-- /results -->)", re.S)
NOT_RECORDED = "not recorded"


class ResultsError(Exception):
    pass


# --- the file -------------------------------------------------------------------------------------
def load(path):
    """The records of `path` by id, the last line of an id winning, in the order ids first appear."""
    by_id = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as e:
                raise ResultsError(f"{path}:{n}: not JSON: {e}") from None
            for key in ("id", "group"):
                if not isinstance(record.get(key), str):
                    raise ResultsError(f"{path}:{n}: a record needs a string '{key}'")
            by_id[record["id"]] = record
    return by_id


def machine_text():
    """This machine's CPU as /proc/cpuinfo names it, with its core count."""
    model = NOT_RECORDED
    try:
        with open("/proc/cpuinfo") as f:
            found = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
            model = found.group(1).strip() if found else model
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def source_commit(folder):
    """The git commit of the checkout holding `folder` (with -dirty for local changes), else not recorded:
    an installed prefix has no history."""
    try:
        run = subprocess.run(["git", "-C", folder, "describe", "--always", "--dirty", "--abbrev=7"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return NOT_RECORDED
    return run.stdout.strip() if run.returncode == 0 and run.stdout.strip() else NOT_RECORDED


def append_records(path, records, commit=None):
    """Appends `records` to the results file, each stamped with today's UTC date, this machine and the
    commit (given, else the git commit of this script's checkout) where it does not say already."""
    stamp = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
             "commit": commit or source_commit(HERE), "machine": machine_text()}
    with open(path, "a") as f:
        for r in records:
            f.write(json.dumps({**r, **{k: v for k, v in stamp.items() if k not in r}}, ensure_ascii=False) + "\n")


# --- numbers as the page writes them ---------------------------------------------------------------
def number(v, digits=None):
    if digits is not None:
        return f"{v:.{digits}f}"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 100):
        return f"{int(v):,}"
    return repr(v)


def value_text(r, digits=None):
    v = r.get("value")
    if v is None:
        text = r.get("mark") or "-"
        if r.get("raw_ratio") is not None:
            text += f" ({number(r['raw_ratio'], 2)} of raw)"
        return text
    if isinstance(v, list):
        parts = [number(x, digits) for x in v]
        text = parts[0] if len(set(parts)) == 1 else "-".join(parts)
    else:
        text = number(v, digits)
    unit = r.get("unit") or ""
    return f"{text} {unit}".strip() if unit not in ("%",) else text + unit


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def provenance(r):
    return [f"`{r.get('command', NOT_RECORDED)}`", r.get("date", NOT_RECORDED), r.get("commit", NOT_RECORDED),
            r.get("machine", NOT_RECORDED)]


# --- the page's blocks -------------------------------------------------------------------------------
def figures_block(records):
    rows = [[r.get("figure", r["id"]), f"**{value_text(r)}**", r.get("detail", "")] + provenance(r) for r in records]
    return table(["figure", "value", "detail", "command", "date", "commit", "machine"], rows)


def machines_block(records):
    return "".join(f"- `{r['machine']}`: {r['text']}\n" for r in records)


def scaling_block(records):
    """One row per (model, stand-in, link, servers), a column per worker count, each cell the ratio
    max(compute, floor) / step or the mark that says which limit of the host the row met; then each
    row's command, date, commit and machine."""
    counts = sorted({r["workers"] for r in records})
    rows, origin = {}, {}
    for r in records:
        key = (r["model"], r["compute_ms"], r["link"], r["servers"])
        rows.setdefault(key, {})[r["workers"]] = value_text(r, 2)
        origin.setdefault(key, []).append(r)
    body = [[m, f"{ms:g} ms", link, "colocated" if s == "colocated" else f"apart ({s})"]
            + [cells.get(w, "") for w in counts] for (m, ms, link, s), cells in rows.items()]
    out = table(["model", "stand-in", "link", "servers"] + [f"{w} worker{'s' if w > 1 else ''}" for w in counts], body)
    out += "\nWhere each row was measured:\n\n"
    for (m, ms, link, s), rs in origin.items():
        seen = []
        for r in rs:
            p = provenance(r)
            if p not in seen:
                seen.append(p)
        for p in seen:
            out += f"- {m}, {ms:g} ms, {link}, servers {s}: {p[0]}, {p[1]}, commit {p[2]}, machine `{p[3]}`\n"
    return out


RENDERERS = {"machine": machines_block, "scaling": scaling_block}


def render_group(results, group):
    records = [r for r in results.values() if r["group"] == group]
    if not records:
        raise ResultsError(f"no records of group '{group}' in the results file")
    return RENDERERS.get(group, figures_block)(records)


# --- README's sentences ---------------------------------------------------------------------------
def readme_summary(results):
    """README's figures, each taken from the record it names."""
    def get(i):
        if i not in results:
            raise ResultsError(f"README quotes '{i}', which the results file does not hold")
        return results[i]

    def v(i):
        return get(i)["value"]

    def pct(i):
        return f"{v(i) * 100:.1f}%"

    def span(items, fmt="{:.2f}"):
        """The range of the values of `items` (record ids, or numbers), as "lo-hi" or one figure."""
        vals = []
        for i in items:
            x = v(i) if isinstance(i, str) else i
            vals += x if isinstance(x, list) else [x]
        lo, hi = fmt.format(min(vals)), fmt.format(max(vals))
        return lo if lo == hi else f"{lo}-{hi}"

    mlp = v("accuracy/mlp")
    cpu = [f"compute/cpu/{m}" for m in ("mlp", "lenet", "resnet-20")]
    gpu128 = [f"compute/gpu/{m}/128" for m in ("resnet-20", "resnet-110", "resnet-50")]
    gpu512 = [f"compute/gpu/{m}/512" for m in ("resnet-20", "resnet-110", "resnet-50", "vgg-16", "inception-bn")]
    cases = ("1x1/2x218776", "1x1/15x4194304", "2x1/2x218776", "2x1/15x4194304")
    apart = [get(f"pslite/resnet-50/apart/{w}w") for w in (1, 2, 4)]
    ahead = [100 * (1 - r["value"] / r["pslite_ms"]) for r in apart]
    coloc = [get(f"pslite/{m}/colocated/{w}w") for m in ("resnet-50", "vgg-16") for w in (2, 4)]
    level = max(abs(r["value"] / r["pslite_ms"] - 1) * 100 for r in coloc)
    gap = max(max(v("actors/host_latency/detached")), max(v("actors/host_latency/shared")))
    floor = min(r["value"] for r in results.values()
                if r["group"] == "scaling" and r.get("value") is not None and r["workers"] <= 4)
    ps1, ps2 = get("transport/pslite/1x1/15x4194304"), get("transport/pslite/2x2/15x4194304")
    return textwrap.fill(
        "Results (each figure with its command, date, commit and machine in "
        "[docs/benchmarks.md](docs/benchmarks.md), made from [docs/results.jsonl](docs/results.jsonl)): "
        f"LeNet reaches {pct('accuracy/lenet')} and the MLP {mlp[0] * 100:.1f}-{mlp[1] * 100:.1f}% validation "
        "accuracy on Fashion-MNIST in 10 epochs with the default flags; the training step runs "
        f"{span(cpu)}x as fast as PyTorch 1.13 on the same 2 CPU cores, and on an H100 GPU "
        f"{span(gpu128)}x PyTorch 2.11 eager for the ResNets at batch 128 but {span(gpu512)}x at batch 512. "
        f"With 4 computes LeNet reaches {pct('accuracy/bsp4')} (BSP), {pct('accuracy/async4')} (async) and "
        f"{pct('accuracy/ssp4')} (SSP(2)); with a 60 MB model and a 50 ms compute stand-in, BSP keeps "
        f"{span([f'actors/messaging/60mb/{w}' for w in (1, 2, 4, 8)], '{:.0f}')}% of the ideal step rate for "
        "1-8 computes. Through the actors LeNet and ResNet-20 train at "
        f"{span(['actors/session/lenet', 'actors/session/resnet-20'])} of the bare step's samples/s; the MLP "
        f"at {v('actors/session/mlp'):.2f} with both cores computing (goal 0.8, not met), "
        f"{v('actors/session/mlp_threads1'):.2f} with one left to the actors. A host actor ticking every 2 ms "
        f"beside a session sees gaps of at most {gap:g} ms. Between processes on one machine, Troupe's channels "
        "over the Unix sockets they take there move "
        f"a step {span([f'transport/raw/on/{c}' for c in cases])}x as fast as plain loopback TCP moving the same "
        f"bytes, and over loopback TCP themselves at {span([f'transport/raw/off/{c}' for c in cases])} of it; "
        f"a push + answer of a 60 MiB model over TCP took {ps1['value']:g} ms (1 worker, 1 server) and "
        f"{ps2['value']:g} ms (2 and 2) against {ps1['pslite_ms']:g} and {ps2['pslite_ms']:g} ms for ps-lite. "
        "On emulated hosts with 1 and 10 Gbit links and compute stand-ins, every 1-, 2- and 4-worker row "
        f"that the host's CPU or its TCP does not limit reaches at least {floor:.2f} of the network's floor "
        "(`troupe bench scaling`, goal 0.9); with the servers apart Troupe's ResNet-50 step is "
        f"{span(ahead, '{:.0f}')}% shorter than "
        "ps-lite's at 1, 2 and 4 workers, and with the servers beside the workers the two are level "
        f"(within {level:.0f}%) on ResNet-50 and VGG-16.", width=100, break_long_words=False,
        break_on_hyphens=False) + "\n"


# --- rewriting and checking -------------------------------------------------------------------------
def rewrite(text, render, where):
    def block(m):
        return m.group(1) + render(m.group(2)) + m.group(4)
    out, n = BLOCK.subn(block, text)
    if n == 0:
        raise ResultsError(f"{where}: no `<!-- results: GROUP -->` ... `<!-- /results -->` block")
    return out


def first_difference(a, b):
    for n, (x, y) in enumerate(zip(a.split("\n"), b.split("\n")), 1):
        if x != y:
            return n, x, y
    return min(a.count("\n"), b.count("\n")) + 1, "(end)", "(end)"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--results", default=os.path.join(REPO, "docs", "results.jsonl"))
    p.add_argument("--page", default=os.path.join(REPO, "docs", "benchmarks.md"))
    p.add_argument("--readme", default=os.path.join(REPO, "README.md"))
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 where a file differs")
    args = p.parse_args(argv)
    try:
        results = load(args.results)
        outputs = {}
        for path, render in ((args.page, lambda g: render_group(results, g)),
                             (args.readme, lambda g: readme_summary(results) if g == "readme" else
                              render_group(results, g))):
            with open(path) as f:
                old = f.read()
            outputs[path] = (old, rewrite(old, render, path))
    except (OSError, ResultsError) as e:
        print(f"results_page: {e}", file=sys.stderr)
        return 2
    stale = 0
    for path, (old, new) in outputs.items():
        if old == new:
            continue
        if args.check:
            n, x, y = first_difference(old, new)
            print(f"{path}:{n}: differs from {args.results}\n  is:     {x}\n  should: {y}", file=sys.stderr)
            stale += 1
        else:
            with open(path, "w") as f:
                f.write(new)
            print(f"rewrote {path}")
    if stale:
        print(f"results_page: run scripts/results_page.py to rewrite {stale} file(s) from {args.results}",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
