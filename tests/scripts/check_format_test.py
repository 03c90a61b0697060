#!/usr/bin/env python3
"""scripts/check_format.sh in a scratch repository with the project's .clang-format: a
formatted source passes, one that differs fails naming the file, and --fix makes it pass.
Exit 77 (skipped) without clang-format or git."""
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
source = os.path.join(here, "..", "..")
if not shutil.which("clang-format") or not shutil.which("git"):
    print("skipped: no clang-format or git")
    sys.exit(77)

with tempfile.TemporaryDirectory(prefix="troupe_format_") as repo:
    os.makedirs(os.path.join(repo, "scripts"))
    shutil.copy(os.path.join(source, "scripts", "check_format.sh"), os.path.join(repo, "scripts"))
    shutil.copy(os.path.join(source, ".clang-format"), repo)
    with open(os.path.join(repo, "good.cpp"), "w") as f:
        f.write("int add(int a, int b) {\n  return a + b;\n}\n")
    with open(os.path.join(repo, "bad.hpp"), "w") as f:
        f.write("int  twice( int a ){return 2*a;}\n")
    run = lambda *args: subprocess.run(args, cwd=repo, capture_output=True, text=True)
    run("git", "init", "-q")
    run("git", "add", ".")
    script = os.path.join(repo, "scripts", "check_format.sh")
    done = run("bash", script)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "1 file(s) differ" in done.stderr and "bad.hpp" in done.stderr, done.stderr
    assert "good.cpp" not in done.stderr, done.stderr
    fixed = run("bash", script, "--fix")
    assert fixed.returncode == 0, fixed.stderr
    done = run("bash", script)
    assert done.returncode == 0 and "2 files formatted" in done.stdout, (done.stdout, done.stderr)
print("ok: a file that differs fails naming it; --fix mends it")
