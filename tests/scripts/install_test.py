#!/usr/bin/env python3
"""`troupe bench scaling` from an installed prefix, with the source and build trees out of reach.

usage: install_test.py help BUILD_DIR SOURCE_DIR
       install_test.py run BUILD_DIR SOURCE_DIR

Both install BUILD_DIR into a fresh prefix (`cmake --install BUILD_DIR --prefix P`), copy the prefix
elsewhere (so nothing can lean on the path it was installed to) and run that copy's troupe from a
folder outside both trees, without TROUPE_SCRIPTS_DIR:
  help  the installed scripts and configs name neither tree; `bench scaling --help` prints the
        bench's usage, and (where strace is) opens no file in either tree
  run   as root, a one-row scaling run (a tiny model, 1 worker, 1 Gbit) ends with its
        `scaling/floor:` line, writes its results record (commit "not recorded": an installed
        prefix has no history), and under strace opens no file in either tree. Skipped (77)
        without root.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def fail(why):
    print(f"FAIL: {why}")
    raise SystemExit(1)


def install_copy(build, tmp):
    """The copy of a fresh install of `build`: its prefix."""
    prefix = os.path.join(tmp, "installed")
    run = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, text=True,
                         timeout=600)
    if run.returncode != 0:
        fail(f"cmake --install: {run.stdout[-1500:]}{run.stderr[-1500:]}")
    copy = os.path.join(tmp, "moved")
    shutil.copytree(prefix, copy, symlinks=True)
    shutil.rmtree(prefix)
    return copy


def text_files_naming(prefix, trees):
    """Installed text files (not executables or libraries, whose debug and error strings may name a source
    file) that name one of `trees`."""
    found = []
    for folder, _, files in os.walk(prefix):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                data = f.read()
            if data.startswith(b"\x7fELF") or name.endswith(".a"):
                continue
            found += [f"{path} names {t}" for t in trees if t.encode() in data]
    return found


def files_opened_in(log, trees):
    """strace lines of file calls on a path in one of `trees`."""
    with open(log, errors="replace") as f:
        return [line.strip() for line in f if any(f'"{t}/' in line or f'"{t}"' in line for t in trees)]


def run_installed(prefix, argv, tmp, trees, timeout):
    """Runs the installed troupe from `tmp` without TROUPE_SCRIPTS_DIR, under strace when there is one;
    returns the completed run and the file calls it made in `trees` (None without strace)."""
    env = {k: v for k, v in os.environ.items() if k != "TROUPE_SCRIPTS_DIR"}
    command = [os.path.join(prefix, "bin", "troupe")] + argv
    log = os.path.join(tmp, "strace.log")
    strace = shutil.which("strace")
    if strace:
        command = [strace, "-f", "-qq", "-e", "trace=file", "-o", log] + command
    run = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=tmp, env=env)
    return run, (files_opened_in(log, trees) if strace else None)


def main(argv):
    if len(argv) != 3 or argv[0] not in ("help", "run"):
        print(__doc__)
        return 2
    mode, build, source = argv[0], os.path.realpath(argv[1]), os.path.realpath(argv[2])
    if mode == "run" and os.geteuid() != 0:
        print("skipped: needs root (the scaling run's emulated hosts)")
        return SKIP
    trees = [source, build]
    with tempfile.TemporaryDirectory(prefix="troupe-install-") as tmp:
        tmp = os.path.realpath(tmp)
        if tmp.startswith(tuple(t + "/" for t in trees)):
            fail(f"the temporary folder {tmp} is inside a tree it must not reach")
        prefix = install_copy(build, tmp)
        scripts = os.path.join(prefix, "share", "troupe", "scripts")
        for need in ("bench_scaling.py", "emulated_hosts.py", "results_page.py", "chaos.py", "cluster_run.py",
                     "configs/chaos_bsp.troupe"):
            if not os.path.exists(os.path.join(scripts, need)):
                fail(f"not installed: share/troupe/scripts/{need}")
        if mode == "help":
            named = text_files_naming(prefix, trees)
            if named:
                fail("installed files name the trees: " + "; ".join(named[:5]))
            run, opened = run_installed(prefix, ["bench", "scaling", "--help"], tmp, trees, 60)
            if run.returncode != 0 or "usage: troupe bench scaling" not in run.stdout:
                fail(f"bench scaling --help: exit {run.returncode}: {run.stdout[-800:]}{run.stderr[-800:]}")
        else:
            results = os.path.join(tmp, "results.jsonl")
            run, opened = run_installed(prefix, ["bench", "scaling", "--model", "mlp", "--link", "1gbit", "--workers",
                                                 "1", "--compute-ms", "20", "--steps", "4", "--epochs", "2",
                                                 "--host-check", "off", "--results", results], tmp, trees, 600)
            lines = run.stdout.strip().splitlines()
            if run.returncode != 0 or not lines or not lines[-1].startswith("scaling/floor:"):
                fail(f"a one-row run: exit {run.returncode}: {run.stdout[-1500:]}{run.stderr[-1500:]}")
            with open(results) as f:
                records = [json.loads(line) for line in f]
            if len(records) != 1 or records[0]["commit"] != "not recorded" or records[0]["group"] != "scaling":
                fail(f"the run's results record: {records}")
        if opened:
            fail("the installed troupe reached into the trees: " + "; ".join(opened[:5]))
        print(f"ok: {mode}: the installed copy ran from {tmp}"
              + ("" if opened is not None else " (no strace: file calls not checked)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
