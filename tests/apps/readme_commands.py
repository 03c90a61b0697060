#!/usr/bin/env python3
"""Every command in the README's ```sh code blocks, run against this build as a new user would
type it (the README's own `--num-epochs 3` override was refused).

usage: readme_commands.py README APPS_DIR SOURCE_DIR

How a command is run (each README line must fall under one rule; a line no rule covers fails
the test, so a new README command comes with its rule here):
 1. Commands run in a fresh directory where `build/apps` is this build's programs and `examples/`
    and `scripts/` are the source tree's, so they run verbatim, in README order (the resume and
    eval lines use the checkpoints the lines before them wrote). A trailing `# comment` and
    comment-only continuation lines are not part of a command.
 2. Data: a command on Fashion-MNIST (the default dataset) gets `--data-dir TINY`, the first 1200
    training and 200 test images of /usr/share/datasets/fashion-mnist (random images in the same
    idx files where that is absent). Epochs, networks and every other flag stay as written.
 3. Benchmarks are shortened by the flags in SHORTEN (fewer steps, rounds and models).
 4. What needs something this machine lacks must be refused cleanly, exit 1 or 2 with a message
    naming it: a data directory that is not there (~/cifar-10-batches-bin), a GPU (--devices
    gpu:0), PyTorch (load_checkpoint.py, bench_vs_torch.py), and the user's own files the README
    only names (c.troupe, hosts). Where the thing is present the command runs (under rule 2/3).
    Without `dot`, `troupe graph ... | dot ...` runs its troupe half and must print DOT.
 5. `mpirun ... CMD` runs under mpirun as written, on the tiny copy (rule 2's --data-dir; as
    root with --allow-run-as-root, which Open MPI demands there); without mpirun it is skipped.
 6. ./scripts/train.sh and ./scripts/test.sh install packages and build the project, which a
    test must not: they are checked as shell (`bash -n`), and train.sh's own training command
    (its `exec` line) runs under rule 2 with --num-epochs 1.
 7. `export NAME=...` runs in bash and NAME keeps its value for the commands after it.
 8. `troupe ctl` asks a running cluster's scheduler, and none runs here: it must be refused,
    exit 1, naming the address it asked (tests/apps/ctl_run.py runs it against a cluster).
"""
import gzip
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile

readme, apps, source = (os.path.abspath(a) for a in sys.argv[1:4])
work = tempfile.mkdtemp(prefix="troupe_readme_")
os.makedirs(os.path.join(work, "build"))
os.symlink(apps, os.path.join(work, "build", "apps"))
for folder in ("examples", "scripts"):
    os.symlink(os.path.join(source, folder), os.path.join(work, folder))
tiny = os.path.join(work, "tiny-fashion-mnist")

SHORTEN = {
    r"^build/apps/troupe bench$": ["--steps", "2", "--warmup", "1"],
    r"^build/apps/troupe bench transport$": ["--layouts", "1x1", "--patterns", "4x65536", "--rounds", "1",
                                             "--steps", "2", "--warmup", "1"],
    r"^build/apps/troupe_bench_messaging$": ["--workers", "1,2", "--steps", "3", "--step-ms", "5",
                                             "--model-mb", "0.2", "--keys", "4"],
    r"^build/apps/troupe_bench_host_latency$": ["--steps", "4", "--rounds", "1"],
    r"^scripts/bench_session.py$": ["--models", "lenet", "--rounds", "1"],  # synthetic data, 60 steps
    r"^scripts/bench_vs_torch.py$": ["--models", "mlp", "--rounds", "1"],
    r"^build/apps/troupe bench scaling ": ["--workers", "1", "--steps", "2", "--epochs", "2"],
}


def write_tiny_fashion_mnist():
    """The first images of Fashion-MNIST in its own idx files (or random ones where absent)."""
    os.makedirs(tiny)
    real = "/usr/share/datasets/fashion-mnist"
    for prefix, count in (("train", 1200), ("t10k", 200)):
        images_path = os.path.join(real, f"{prefix}-images-idx3-ubyte.gz")
        if os.path.exists(images_path):
            with gzip.open(images_path) as f:
                pixels = f.read(16 + 784 * count)[16:]
            with gzip.open(os.path.join(real, f"{prefix}-labels-idx1-ubyte.gz")) as f:
                labels = f.read(8 + count)[8:]
        else:
            pixels = os.urandom(784 * count)
            labels = bytes(i % 10 for i in range(count))
        with gzip.open(os.path.join(tiny, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
            f.write(struct.pack(">IIII", 2051, count, 28, 28) + pixels)
        with gzip.open(os.path.join(tiny, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
            f.write(struct.pack(">II", 2049, count) + labels)


def readme_commands():
    """Each command line of the ```sh blocks, without trailing comments."""
    commands, inside, pending = [], False, ""
    for line in open(readme):
        if line.startswith("```"):
            inside = line.strip() == "```sh"
            continue
        if not inside:
            continue
        code = line.split(" #")[0].strip() if not line.lstrip().startswith("#") else ""
        if pending:  # the rest of a line that ended in a backslash
            code = pending + " " + code
            pending = ""
        if code.endswith("\\"):
            pending = code[:-1].strip()
            continue
        if code:
            commands.append(code)
    return commands


def run(args, shell=False):
    done = subprocess.run(args, shell=shell, cwd=work, capture_output=True, text=True, timeout=540,
                          executable="/bin/bash" if shell else None)
    return done.returncode, done.stdout, done.stderr


def have_gpu():
    status, out, _ = run([os.path.join(apps, "troupe"), "devices"])
    return status == 0 and re.search(r"^gpu:\d", out, re.M) is not None


def have_torch():
    return subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0


def on_fashion_mnist(words):
    return (words[1:2] in (["train"], ["eval"], ["launch"]) and "--help" not in words and "--data-dir" not in words
            and "--dataset" not in words and "--data-train" not in words)


def expect_refusal(line, status, out, err, statuses, pattern):
    assert status in statuses, f"{line}: exit {status}, wanted a refusal {statuses}:\n{out}{err}"
    assert re.search(pattern, err), f"{line}: the refusal does not name /{pattern}/:\n{err}"
    lines = [l for l in err.splitlines() if l.strip()]
    assert lines and re.search(pattern, lines[0]), f"{line}: not a clean one-line refusal:\n{err}"


def check(line):
    """Runs one README line under its rule; returns how it was run, for the log."""
    if line.startswith("export "):  # rule 7: the variable holds for the commands after it
        name = line.split()[1].split("=")[0]
        status, out, err = run(f'{line}; printf %s "${name}"', shell=True)
        assert status == 0 and out, f"{line}: exit {status}\n{err}"
        os.environ[name] = out
        return "exported"
    if line.startswith("mpirun "):  # rule 5
        if shutil.which("mpirun") is None:
            return "skipped: no mpirun"
        words = shlex.split(line)
        if os.geteuid() == 0:
            words.insert(1, "--allow-run-as-root")
        status, out, err = run(words + ["--data-dir", tiny, "--progress", "off"])
        assert status == 0 and "Final weights" in out, f"{line}: exit {status}\n{out[-3000:]}{err[-3000:]}"
        return "under mpirun, --data-dir " + tiny
    words = shlex.split(line)
    program = words[0].replace("build/apps/", "")
    if words[0] in ("./scripts/train.sh", "./scripts/test.sh"):  # rule 6
        script = os.path.join(source, words[0])
        assert subprocess.run(["bash", "-n", script]).returncode == 0, script
        if words[0] == "./scripts/train.sh":
            exec_line = re.search(r"^exec ((?:.*\\\n)*.*)", open(script).read(), re.M).group(1)
            own = shlex.split(exec_line.replace("\\\n", " ").replace('"$@"', ""))
            status, out, err = run(own + ["--num-epochs", "1", "--data-dir", tiny, "--progress", "off",
                                          "--metrics", "train_sh.jsonl"])
            assert status == 0, f"{line} (its exec line): exit {status}\n{out}{err}"
        return "bash -n"
    if program == "troupe" and words[1:2] == ["ctl"]:  # rule 8
        status, out, err = run(words)
        at = words[words.index("--scheduler") + 1]
        expect_refusal(line, status, out, err, (1,), "no scheduler at " + re.escape(at))
        return "refused: no scheduler at " + at
    if "c.troupe" in words:  # rule 4: the user's own config and hosts
        status, out, err = run(words)
        expect_refusal(line, status, out, err, (2,), r"c\.troupe|hosts")
        return "refused: no c.troupe"
    if " -H hosts" in line:
        status, out, err = run(words)
        expect_refusal(line, status, out, err, (2,), r"hosts")
        return "refused: no hosts file"
    extra = []
    for pattern, flags in SHORTEN.items():  # rule 3
        if re.search(pattern, line):
            extra = flags
    needs_torch = program.endswith(("load_checkpoint.py", "bench_vs_torch.py"))
    if needs_torch and not have_torch():
        status, out, err = run(words + extra)
        assert status != 0 and "torch" in out + err, f"{line}: exit {status} without torch:\n{out}{err}"
        return "refused: no PyTorch"
    if "--devices" in words and re.search(r"gpu:\d", line) and not have_gpu():
        status, out, err = run(words)
        expect_refusal(line, status, out, err, (1,), r"gpu:\d+ is not available")
        return "refused: no GPU"
    if "--data-dir" in words:
        data_dir = os.path.expanduser(words[words.index("--data-dir") + 1])
        if not os.path.isdir(data_dir):
            status, out, err = run([os.path.expanduser(w) for w in words])
            expect_refusal(line, status, out, err, (1,), re.escape(data_dir))
            return "refused: no " + data_dir
    if on_fashion_mnist(words):  # rule 2
        extra += ["--data-dir", tiny]
    if "|" in words:
        if shutil.which("dot") is None:  # rule 4: the troupe half only
            left = shlex.split(line.split("|")[0])
            status, out, err = run(left)
            assert status == 0 and out.startswith("digraph"), f"{line}: exit {status}\n{out}{err}"
            return "without dot: graph only"
        status, out, err = run(line, shell=True)
        assert status == 0, f"{line}: exit {status}\n{out}{err}"
        return "as written"
    status, out, err = run(words + extra)
    assert status == 0, f"{line}: exit {status}\n{out[-3000:]}{err[-3000:]}"
    return "with " + " ".join(extra) if extra else "as written"


def main():
    write_tiny_fashion_mnist()
    commands = readme_commands()
    assert len(commands) > 20, commands
    failures = []
    for line in commands:
        try:
            print(f"ok ({check(line)}): {line}", flush=True)
        except (AssertionError, OSError, subprocess.TimeoutExpired) as e:
            failures.append(str(e))
            print(f"FAILED: {e}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.exit(f"{len(failures)} of {len(commands)} README commands failed")


if __name__ == "__main__":
    main()
