#!/usr/bin/env python3
"""What a run writes for the tools people point at it.

usage: log_lines_test.py TROUPE_BINARY CASE   (cases: parse_log, run_record, top_k)

parse_log: MXNet's tools/parse_log.py reads a log by regular expressions. Its older form uses
three patterns, `Epoch[N] Train...=V`, `Epoch[N] Valid...=V`, `Epoch[N] Time...=V`, and
averages every value a pattern matches per epoch; its current form builds one pattern per
`--metric-names` entry (`Epoch[N] Train-NAME...=V`, `Epoch[N] Validation-NAME...=V`, default
`accuracy`) plus the time pattern, first match wins. Both are re-implemented below from that
description and run on our log; the accuracies and times they report must be the run's own
figures from its metrics file. Since the older form takes every `Epoch[N] Train...=V` line for
accuracy, loss lines carry their value after a colon (`Train-cross-entropy: V`), and
must read back as the metrics file's loss.

top_k: `--top-k 3` prints `Epoch[N] Train-top_k_accuracy_3: V` and the Validation line (after a
colon, like the loss, so neither parse_log form takes it for accuracy), appends
`top_k_accuracy_3=V` to the batch lines (MXNet's Speedometer prints every metric so; parse_log
reads no batch line), and writes top_k, train_top_k_accuracy and val_top_k_accuracy into the
metrics file; values beyond the classes or negative are refused naming the flag.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

troupe, case = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp(prefix="troupe_log_")
tiny = ["--network", "mlp", "--dataset", "synthetic", "--image-shape", "1,8,8",
        "--num-examples", "384", "--batch-size", "32", "--progress", "off", "--num-epochs", "2"]


def train(*extra):
    metrics = os.path.join(work, "m.jsonl")
    done = subprocess.run([troupe, "train", *tiny, "--metrics", metrics, *extra],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in open(metrics)]
    return done.stdout, rows


def tally(lines, patterns):
    """parse_log's loop: per epoch, per pattern, the sum and count of matched values."""
    data = {}
    for line in lines:
        for i, pattern in enumerate(patterns):
            m = pattern.match(line)
            if m:
                break
        else:
            continue
        epoch, value = int(m.group(1)), float(m.group(2))
        sums = data.setdefault(epoch, [0.0] * (2 * len(patterns)))
        sums[2 * i] += value
        sums[2 * i + 1] += 1
    return {e: [s[2 * i] / s[2 * i + 1] if s[2 * i + 1] else None for i in range(len(patterns))]
            for e, s in data.items()}


def old_parse_log(lines):
    return tally(lines, [re.compile(r".*Epoch\[(\d+)\] Train.*=([.\d]+)"),
                         re.compile(r".*Epoch\[(\d+)\] Valid.*=([.\d]+)"),
                         re.compile(r".*Epoch\[(\d+)\] Time.*=([.\d]+)")])


def new_parse_log(lines, names):
    return tally(lines, [re.compile(r".*Epoch\[(\d+)\] Train-" + n + r".*=([.\d]+)") for n in names]
                 + [re.compile(r".*Epoch\[(\d+)\] Validation-" + n + r".*=([.\d]+)") for n in names]
                 + [re.compile(r".*Epoch\[(\d+)\] Time.*=([.\d]+)")])


def close(a, b):
    return a is not None and abs(a - b) < 5e-6


def case_parse_log():
    out, rows = train()
    lines = out.splitlines(keepends=True)
    epochs = [r for r in rows if "epoch" in r]
    old = old_parse_log(lines)
    new = new_parse_log(lines, ["accuracy"])
    loss = {(int(e), phase): float(v) for e, phase, v in
            re.findall(r"^Epoch\[(\d+)\] (Train|Validation)-cross-entropy: ([.\d]+)$", "".join(lines), re.M)}
    for r in epochs:
        e = r["epoch"]
        train_acc, val_acc, seconds = old[e]
        assert close(train_acc, r["train_accuracy"]), (e, train_acc, r)
        assert close(val_acc, r["val_accuracy"]), (e, val_acc, r)
        assert seconds is not None and abs(seconds - r["time_s"]) < 1e-3, (e, seconds, r)
        train_acc, val_acc, seconds = new[e]
        assert close(train_acc, r["train_accuracy"]) and close(val_acc, r["val_accuracy"]), (e, new[e], r)
        assert close(loss.get((e, "Train")), r["train_loss"]), (e, loss, r)
        assert close(loss.get((e, "Validation")), r["val_loss"]), (e, loss, r)


def case_run_record():
    out, rows = train("--seed", "7", "--lr", "0.03")
    start = [line for line in out.splitlines() if line.startswith("Arguments:")]
    assert len(start) == 1, out
    for text in ("--seed 7", "--lr 0.03", "--network mlp", "--num-epochs 2"):
        assert text in start[0], (text, start[0])
    records = [r for r in rows if "config" in r]
    assert len(records) == 1 and rows[0] is records[0], rows
    config = records[0]["config"]
    assert config["seed"] == 7 and config["lr"] == 0.03 and config["batch_size"] == 32, config
    assert config["workers"] == 1 and config["topology"] == "bsp" and config["network"] == "mlp", config
    assert config["epochs"] == 2 and isinstance(config["argv"], list), config
    assert all("config" not in r for r in rows[1:]), rows


def case_top_k():
    out, rows = train("--top-k", "3", "--disp-batches", "4")
    lines = out.splitlines(keepends=True)
    epochs = [r for r in rows if "epoch" in r]
    assert len(epochs) == 2, rows
    top = {(int(e), phase): float(v) for e, phase, v in
           re.findall(r"^Epoch\[(\d+)\] (Train|Validation)-top_k_accuracy_3: ([.\d]+)$", out, re.M)}
    old = old_parse_log(lines)
    new = new_parse_log(lines, ["accuracy"])
    for r in epochs:
        e = r["epoch"]
        assert r["top_k"] == 3, r
        assert r["train_top_k_accuracy"] >= r["train_accuracy"], r
        assert r["val_top_k_accuracy"] >= r["val_accuracy"], r
        assert close(top.get((e, "Train")), r["train_top_k_accuracy"]), (e, top, r)
        assert close(top.get((e, "Validation")), r["val_top_k_accuracy"]), (e, top, r)
        # The top-k lines leave both parse_log forms reading the accuracy alone.
        assert close(old[e][0], r["train_accuracy"]) and close(old[e][1], r["val_accuracy"]), (e, old[e], r)
        assert close(new[e][0], r["train_accuracy"]) and close(new[e][1], r["val_accuracy"]), (e, new[e], r)
    batch_lines = [line for line in lines if "] Batch [" in line]
    assert batch_lines and all(re.search(r"\taccuracy=[.\d]+\ttop_k_accuracy_3=[.\d]+$", line)
                               for line in batch_lines), batch_lines
    assert [r for r in rows if "config" in r][0]["config"]["top_k"] == 3, rows[0]
    for value, words in (("11", "--top-k must be at most the 10 classes, got 11"),
                         ("-1", "--top-k must not be negative")):
        done = subprocess.run([troupe, "train", *tiny, "--top-k", value], capture_output=True, text=True)
        assert done.returncode == 2 and words in done.stderr, (value, done.returncode, done.stderr)
    plain, plain_rows = train()
    assert "top_k_accuracy" not in plain and "top_k=0" in plain, plain  # off unless asked
    assert all("top_k" not in r for r in plain_rows[1:]), plain_rows


if __name__ == "__main__":
    try:
        globals()["case_" + case]()
    except BaseException:
        print(f"(files in {work})")
        raise
    shutil.rmtree(work, ignore_errors=True)
    print("ok: " + case)
