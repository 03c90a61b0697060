#!/usr/bin/env python3
"""The files a run writes, refused up front or never left torn: a checkpoint
folder that takes no files stops `troupe train` before any training, as an unopenable metrics
file does; a metrics file that stops growing mid-run (a full disk) keeps only whole lines, and
the run stops naming it. Each case runs the real binary and checks the files and statuses.

usage: output_files.py TROUPE_BINARY CASE       (cases: the functions named case_*)
"""
import atexit
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

troupe = sys.argv[1]
work = tempfile.mkdtemp(prefix="troupe_outputs_")
atexit.register(shutil.rmtree, work, ignore_errors=True)
# 384 synthetic examples of 8x8, 12 batches of 32 per epoch: seconds, not minutes.
tiny = ["--network", "mlp", "--dataset", "synthetic", "--image-shape", "1,8,8",
        "--num-examples", "384", "--batch-size", "32", "--progress", "off", "--threads", "1"]


def run(*args, cwd=work, preexec_fn=None):
    return subprocess.run([troupe, *args], capture_output=True, text=True, cwd=cwd,
                          preexec_fn=preexec_fn)


def refused_before_training(done, pattern):
    """Exit 1 (as for a metrics file that cannot be opened), one line matching `pattern`, and
    not a batch trained."""
    everything = done.stdout + done.stderr
    assert done.returncode == 1, f"exit {done.returncode}, wanted 1:\n{everything}"
    assert re.search(pattern, done.stderr), f"/{pattern}/ not in stderr:\n{done.stderr}"
    assert "Start training" not in done.stdout and "Epoch[" not in done.stdout, everything


def case_model_prefix_unwritable():
    # (A missing folder is made before training: first_hour.py, case_prefix_folder.)
    # Folders no file can be created in, whoever runs the test (root ignores permission bits):
    # a regular file where the folder should be, below it, and /proc.
    with open(os.path.join(work, "somefile"), "w") as f:
        f.write("not a folder\n")
    done = run("train", *tiny, "--num-epochs", "1", "--model-prefix", "somefile/m")
    refused_before_training(done, r"--model-prefix somefile/m: .*somefile.*Not a directory")
    done = run("train", *tiny, "--num-epochs", "1", "--model-prefix", "somefile/deeper/m")
    refused_before_training(done, r"--model-prefix somefile/deeper/m: .*somefile")
    done = run("train", *tiny, "--num-epochs", "1", "--model-prefix", "/proc/self/m")
    proc = r"--model-prefix /proc/self/m: /proc/self: cannot create files in it: \S"
    refused_before_training(done, proc)
    assert open(os.path.join(work, "somefile")).read() == "not a folder\n"
    if os.geteuid() != 0:  # a read-only folder stops only those the permission bits bind
        os.mkdir(os.path.join(work, "readonly"), 0o555)
        done = run("train", *tiny, "--num-epochs", "1", "--model-prefix", "readonly/m")
        refused_before_training(done, r"readonly: cannot create files in it: Permission denied")
        assert os.listdir(os.path.join(work, "readonly")) == []


def lines_of(path):
    text = open(path).read()
    assert text == "" or text.endswith("\n"), f"{path} ends inside a line: {text[-80:]!r}"
    return [json.loads(line) for line in text.splitlines()]


def case_metrics_full():
    # A full disk, without root: a file size limit (RLIMIT_FSIZE) on the run with SIGXFSZ
    # ignored, so write(2) fails with EFBIG. The limit falls inside the first epoch's line,
    # measured from an unlimited run of the same job (same arguments, same config record).
    args = ["train", *tiny, "--num-epochs", "3", "--metrics", "m.jsonl"]
    whole, cut = os.path.join(work, "whole"), os.path.join(work, "cut")
    os.mkdir(whole)
    os.mkdir(cut)
    done = run(*args, cwd=whole)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = open(os.path.join(whole, "m.jsonl")).read().splitlines(keepends=True)
    assert len(lines) == 4 and "config" in json.loads(lines[0]), lines
    limit = len(lines[0].encode()) + len(lines[1].encode()) // 2

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # ignored stays ignored across exec
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    done = run(*args, cwd=cut, preexec_fn=limited)
    path = os.path.join(cut, "m.jsonl")
    assert done.returncode == 1, f"exit {done.returncode}:\n{done.stdout}{done.stderr}"
    assert re.search(r"m\.jsonl: write failed: File too large", done.stderr), done.stderr
    records = lines_of(path)
    assert len(records) == 1 and "config" in records[0], records
    # Exactly the config's line, whole: the part of the epoch's line that got out is cut away.
    # (Its length is not the unlimited run's: the wall-clock "time" has as many digits as it needs.)
    data = open(path, "rb").read()
    assert data.count(b"\n") == 1 and data.endswith(b"\n"), data[-200:]


if __name__ == "__main__":
    globals()["case_" + sys.argv[2]]()
    print("ok: " + sys.argv[2])
