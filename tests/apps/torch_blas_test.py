#!/usr/bin/env python3
"""scripts/torch_blas.py: which BLAS PyTorch computes with, from its memory map and its build
configuration, and the refusal to time it on the reference BLAS; and
scripts/bench_vs_torch.py refusing before it times anything, with a stand-in Python that answers
the probe as PyTorch on the reference BLAS would (this machine need not have PyTorch).

usage: torch_blas_test.py REPO
"""
import os
import stat
import subprocess
import sys
import tempfile

REPO = sys.argv[1]
sys.path.insert(0, os.path.join(REPO, "scripts"))
import torch_blas  # noqa: E402

OPENBLAS = "7f3a1c000000-7f3a1c200000 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3\n"
REFERENCE = "7f3a1c000000-7f3a1c200000 r-xp 00000000 08:01 124 /usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0\n"
OTHER = ("55d0c0000000-55d0c0001000 r--p 00000000 08:01 1 /usr/bin/python3.11\n"
         "7f3a1d000000-7f3a1d100000 r-xp 00000000 08:01 9 /usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13\n"
         "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n")
CONFIG_GENERIC = "PyTorch built with:\n  - Build settings: BLAS_INFO=generic, BUILD_TYPE=Release, LAPACK_INFO=generic,\n"
CONFIG_OPEN = "PyTorch built with:\n  - Build settings: BLAS_INFO=open, BUILD_TYPE=Release,\n"

failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


check("BLAS_INFO read", torch_blas.blas_info(CONFIG_GENERIC), "generic")
check("no BLAS_INFO", torch_blas.blas_info("nothing"), None)
check("libraries mapped", torch_blas.loaded_libraries(OTHER + OPENBLAS + OPENBLAS),
      ["/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"])
check("nothing mapped", torch_blas.loaded_libraries(OTHER), [])
# The library loaded decides, whatever PyTorch was built against (Debian's says generic).
check("OpenBLAS loaded", torch_blas.describe(CONFIG_GENERIC, OTHER + OPENBLAS)[1], False)
check("OpenBLAS allowed", torch_blas.refusal(CONFIG_GENERIC, OTHER + OPENBLAS), None)
check("reference loaded", torch_blas.describe(CONFIG_OPEN, OTHER + REFERENCE)[1], True)
why = torch_blas.refusal(CONFIG_GENERIC, OTHER + REFERENCE) or ""
for part in ("the reference BLAS (/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0)", "libopenblas0-pthread"):
    if part not in why:
        failures.append(f"the refusal does not say {part!r}: {why!r}")
# Nothing mapped (a static build): the build configuration decides.
check("generic build, nothing mapped", torch_blas.describe(CONFIG_GENERIC, OTHER)[1], True)
check("OpenBLAS build, nothing mapped", torch_blas.refusal(CONFIG_OPEN, OTHER), None)

# bench_vs_torch.py with a stand-in Python answering the probe as PyTorch on the reference
# BLAS: it refuses, naming the library, before timing anything (its troupe does not exist).
with tempfile.TemporaryDirectory() as tmp:
    fake = os.path.join(tmp, "python")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\ncat <<'END'\n=== config\n" + CONFIG_GENERIC + "=== maps\n" + OTHER + REFERENCE + "END\n")
    os.chmod(fake, stat.S_IRWXU)
    run = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "bench_vs_torch.py"), "--python", fake,
                          "--troupe", os.path.join(tmp, "no-troupe"), "--models", "mlp"],
                         capture_output=True, text=True, timeout=60)
    if run.returncode == 0 or "refused: PyTorch computes with the reference BLAS" not in run.stderr:
        failures.append(f"bench_vs_torch.py on the reference BLAS: exit {run.returncode}\n{run.stdout}\n{run.stderr}")
    if "img/s" in run.stdout:
        failures.append(f"bench_vs_torch.py printed its table before refusing:\n{run.stdout}")
    run = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "torch_blas.py"), fake],
                         capture_output=True, text=True, timeout=60)
    if run.returncode == 0 or "libopenblas0-pthread" not in run.stderr:
        failures.append(f"torch_blas.py on the reference BLAS: exit {run.returncode}\n{run.stderr}")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\ncat <<'END'\n=== config\n" + CONFIG_GENERIC + "=== maps\n" + OTHER + OPENBLAS + "END\n")
    run = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "torch_blas.py"), fake],
                         capture_output=True, text=True, timeout=60)
    if run.returncode != 0 or "PyTorch computes with OpenBLAS" not in run.stdout:
        failures.append(f"torch_blas.py on OpenBLAS: exit {run.returncode}\n{run.stdout}\n{run.stderr}")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho 'ModuleNotFoundError: No module named torch' >&2\nexit 1\n")
    run = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "torch_blas.py"), fake],
                         capture_output=True, text=True, timeout=60)
    if run.returncode == 0 or "cannot ask PyTorch" not in run.stderr:
        failures.append(f"torch_blas.py without torch: exit {run.returncode}\n{run.stderr}")

if failures:
    sys.exit("FAIL:\n" + "\n".join(failures))
print("ok: the reference BLAS is refused by name, OpenBLAS is taken, bench_vs_torch.py refuses before timing")
