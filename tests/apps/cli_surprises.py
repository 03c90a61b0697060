#!/usr/bin/env python3
"""The command line without surprises: one case per reported defect, each run
against the real binary and checking the property itself (values, exit statuses, files).

usage: cli_surprises.py TROUPE_BINARY CASE       (cases: the functions named case_*)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

troupe = sys.argv[1]
work = tempfile.mkdtemp(prefix="troupe_cli_")
# A run small enough for a test: 384 synthetic examples of 8x8, 12 batches of 32 per epoch.
tiny = ["--network", "mlp", "--dataset", "synthetic", "--image-shape", "1,8,8",
        "--num-examples", "384", "--batch-size", "32", "--progress", "off"]


def run(*args, env=None):
    return subprocess.run([troupe, *args], capture_output=True, text=True, cwd=work,
                          env=dict(os.environ, **(env or {})))


def expect(done, status, pattern, stream="stderr"):
    text = getattr(done, stream)
    assert done.returncode == status, f"exit {done.returncode}, wanted {status}:\n{done.stdout}{done.stderr}"
    assert re.search(pattern, text), f"/{pattern}/ not in {stream}:\n{text}"


def check_values(path):
    """`troupe check`'s resolved values, key -> text."""
    done = run("check", path)
    assert done.returncode == 0, done.stderr
    return dict(re.findall(r"^\s*([a-z_]+\.[a-z_.]+)\s*=\s*(\S+)", done.stdout, re.M))


def write(name, text, mode="w"):
    path = os.path.join(work, name)
    with open(path, mode) as f:
        f.write(text)
    return path


def epochs_of(path):
    return [r for r in (json.loads(line) for line in open(path)) if "epoch" in r]


def case_flag_twice():
    # The README's `./scripts/train.sh --network mlp` passes --network twice: the last wins.
    done = run("train", *tiny, "--num-epochs", "3", "--num-epochs", "1", "--metrics", "twice.jsonl")
    assert done.returncode == 0, done.stderr
    assert len(epochs_of(os.path.join(work, "twice.jsonl"))) == 1


def case_directory_config():
    expect(run("check", work), 2, r"is a directory")
    expect(run("train", "--config", work), 2, r"is a directory")


def case_metrics_early():
    # A metrics file that cannot be opened stops the run before any training, with the reason.
    done = run("train", *tiny, "--metrics", "/nonexistent-dir/m.jsonl")
    expect(done, 1, r"/nonexistent-dir/m.jsonl.*No such file or directory")
    assert "Start training" not in done.stdout and "unhandled" not in done.stderr, done.stdout + done.stderr
    done = run("train", *tiny, "--metrics", "/dev/full")
    expect(done, 1, r"/dev/full.*No space left on device")
    assert "Start training" not in done.stdout, done.stdout


def case_metrics_locked():
    # A second run refuses a metrics file another run is writing; the first one's file stays whole.
    path = os.path.join(work, "shared.jsonl")
    first = subprocess.Popen([troupe, "train", *tiny, "--num-epochs", "1000", "--metrics", path],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work)
    try:
        while not (os.path.exists(path) and os.path.getsize(path) > 0):
            assert first.poll() is None, first.communicate()
        second = run("train", *tiny, "--num-epochs", "1", "--metrics", path)
        expect(second, 1, r"shared.jsonl.*another run is writing it")
    finally:
        first.kill()
        first.wait()
    for line in open(path):
        json.loads(line)


def case_short_schedule():
    # One epoch: warm-up ends before the first decay, at every length.
    for epochs in (1, 2, 3, 10, 90):
        values = check_values(write(f"e{epochs}.troupe", f"train {{ epochs = {epochs} }}\n"))
        warmup = float(values["schedule.warmup"])
        steps = [float(s) for s in re.findall(r"[\d.]+", values["schedule.steps"])]
        assert steps and warmup < steps[0] and steps[-1] < epochs, (epochs, warmup, steps)


def case_strict_values():
    cases = [(["--lr", "1e9"], r"--lr must be"),
             (["--random-crop-pad", "100000"], r"--random-crop-pad must be"),
             (["--random-mirror", "2"], r"--random-mirror must be 0 or 1"),
             (["--random-mirror", "-5"], r"--random-mirror must be 0 or 1"),
             (["--shards", "64"], r"--shards 64.*parameter"),
             (["--lr-schedule", "cosine", "--lr-factor", "0.5"], r"--lr-factor.*multi-step"),
             (["--num-epochs", "4", "--lr-step-epochs", "2,9"], r"--lr-step-epochs.*9.*4 epochs"),
             (["--threads", "1000"], r"--threads must be between 1 and")]
    for flags, pattern in cases:
        expect(run("train", *tiny, *flags), 2, pattern)


def case_nan_stops():
    done = run("train", *tiny, "--lr", "100", "--mom", "0.99", "--wd", "1", "--warmup-epochs", "0",
               "--lr-schedule", "constant", "--num-epochs", "5", "--metrics", "nan.jsonl")
    expect(done, 1, r"loss became (nan|inf).* epoch \d+, batch \d+")


def case_interrupt():
    path = os.path.join(work, "interrupted.jsonl")
    child = subprocess.Popen([troupe, "train", *tiny, "--num-epochs", "1000", "--metrics", path],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work)
    while len(open(path).readlines() if os.path.exists(path) else []) < 3:
        assert child.poll() is None, child.communicate()
    child.send_signal(2)
    out, err = child.communicate()
    assert child.returncode == 130, (child.returncode, err)
    assert re.search(r"interrupted in epoch \d+ at (batch \d+ of \d+|validation)", err), err
    text = open(path).read()
    assert text.endswith("\n"), text
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["epoch"] for r in rows if "epoch" in r] == list(range(len(rows) - 1)), rows


def case_progress_width():
    for columns in ("40", "72"):
        # Bytes, not text: text mode would turn each '\r' into a line break.
        done = subprocess.run([troupe, "train", *tiny[:-2], "--progress", "on", "--num-epochs", "1"],
                              capture_output=True, cwd=work, env=dict(os.environ, COLUMNS=columns))
        assert done.returncode == 0, done.stderr
        done.stdout = done.stdout.decode()
        redraws = [r for line in done.stdout.split("\n") for r in line.split("\r")[1:]]
        assert redraws, done.stdout
        for line in done.stdout.split("\n"):
            for redraw in line.split("\r")[1:]:  # what follows a carriage return is redrawn
                visible = re.sub(r"\x1b\[K", "", redraw)
                assert len(visible) < int(columns), (columns, visible)


def case_no_validation():
    done = run("train", *tiny, "--num-epochs", "1", "--no-validation", "--metrics", "noval.jsonl")
    assert done.returncode == 0, done.stderr
    start = next(line for line in done.stdout.splitlines() if line.startswith("Start training"))
    assert "validation on" not in start and "no validation" in start, start
    scripts = os.path.join(os.path.dirname(__file__), "..", "..", "scripts")
    table = subprocess.run([sys.executable, os.path.join(scripts, "metrics_table.py"), "--time",
                            "run=" + os.path.join(work, "noval.jsonl")], capture_output=True, text=True)
    assert table.returncode == 0, table.stderr
    assert re.search(r"^\| 0 \| +\| [\d.]+ \| \d+ \|$", table.stdout, re.M), table.stdout


def case_messages():
    done = run("train", "--bogus")
    expect(done, 2, r"^troupe train: unknown flag --bogus")
    assert "train: train:" not in done.stderr and "troupe train: train" not in done.stderr, done.stderr
    expect(run("train", "--batch-sise", "3"), 2, r"did you mean --batch-size\?")
    expect(run("train", "--batch-size", "-3"), 2, r"--batch-size must be between 1 and 1000000000, got -3$")
    expect(run("train", "--lr-step-epochs", "5,3"), 2, r"--lr-step-epochs")
    expect(run("train", "--config", "/nonexistent.troupe"), 2, r"/nonexistent.troupe.*No such file or directory")
    binary = write("binary.troupe", b"\x00\x01\xff\xfe model lenet\x80\x81\n".decode("latin-1"), "w")
    done = run("check", binary)
    assert done.returncode == 2 and "\x00" not in done.stderr and "\xff" not in done.stderr, repr(done.stderr)
    # One exit status per kind of error, for train and check alike: 2 for usage, 1 for data.
    bad = write("bad.troupe", "model alexnet\n")
    for command in (["check", bad], ["train", "--config", bad]):
        expect(run(*command), 2, r"bad.troupe:1")
    data = write("data.troupe", "data train = cifar10(\"/nonexistent/cifar\")\n")
    expect(run("train", "--config", data), 1, r"/nonexistent/cifar")


def case_help():
    commands = ["train", "node", "bench", "devices", "check", "graph", "launch"]
    for command in commands:
        done = run(command, "--help")
        expect(done, 0, r"^usage: troupe " + command, "stdout")
        assert done.stderr == "", done.stderr
        long_lines = [line for line in done.stdout.splitlines() if len(line) > 100]
        assert not long_lines, f"{command}: {long_lines}"
        assert not re.search(r"--\S+ VALUE", done.stdout), f"{command}: VALUE placeholder"
    assert run("help", "train").stdout == run("train", "--help").stdout
    expect(run("help", "train"), 0, r"--lr RATE", "stdout")
    expect(run("train", "--help"), 0, r"--metrics FILE", "stdout")
    expect(run("train", "--help"), 0, r"--num-epochs N", "stdout")
    bare = run()
    expect(bare, 2, r"^usage: troupe <command>")
    assert bare.stdout == "", bare.stdout
    expect(run("help"), 0, r"commands:", "stdout")


if __name__ == "__main__":
    try:
        globals()["case_" + sys.argv[2]]()
    except BaseException:
        print(f"(files in {work})")
        raise
    shutil.rmtree(work, ignore_errors=True)
    print("ok: " + sys.argv[2])
