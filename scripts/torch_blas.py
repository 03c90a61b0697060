"""Which BLAS PyTorch computes with on the CPU, and a refusal to time it on the reference BLAS.

Debian's python3-torch reaches BLAS through libblas.so.3, which update-alternatives points at
whichever implementation is installed: OpenBLAS (libopenblas0-pthread) when it is, else the
reference BLAS (libblas3), which apt may pick on a fresh machine and on which PyTorch's MLP runs
about 18 times slower. A ratio against that is no comparison with PyTorch. So every script that
times PyTorch on the CPU first runs `PROBE` in the Python it times with (a small matmul loads the
BLAS; the process's own memory map then names the library file it loaded, and
torch.__config__.show() the BLAS it was built for) and stops on a refusal, naming the library
and the package to install.

    python3 scripts/torch_blas.py [PYTHON]     # says which BLAS PyTorch runs on; exit 1 if refused
"""
import os
import re
import subprocess
import sys

# Run in the Python that will be timed; prints torch's build configuration and the process's
# memory map after one matmul.
PROBE = r"""
import torch
torch.matmul(torch.ones(64, 64), torch.ones(64, 64))
print("=== config"); print(torch.__config__.show())
print("=== maps"); print(open("/proc/self/maps").read())
"""

INSTALL = "install libopenblas0-pthread beside python3-torch (apt install libopenblas0-pthread)"


def blas_info(config):
    """BLAS_INFO in torch.__config__.show() (what PyTorch was built against), or None."""
    m = re.search(r"BLAS_INFO=([^,\s]+)", config)
    return m.group(1) if m else None


def loaded_libraries(maps):
    """The BLAS library files a process has mapped (its /proc/self/maps), in map order, once."""
    found = []
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6:
            continue
        path = fields[5].strip()
        name = os.path.basename(path)
        if re.match(r"lib(open)?blas|libmkl_|libblis|libatlas|libsatlas|libtatlas", name) and path not in found:
            found.append(path)
    return found


def describe(config, maps):
    """(what PyTorch computes with, whether that is the reference BLAS)."""
    libraries = loaded_libraries(maps)
    for path in libraries:
        if "openblas" in path.lower():
            return f"OpenBLAS ({path})", False
        if "mkl" in path.lower():
            return f"MKL ({path})", False
        if "blis" in path.lower():
            return f"BLIS ({path})", False
        if "atlas" in path.lower():
            return f"ATLAS ({path})", False
    for path in libraries:
        if "/blas/" in path or os.path.basename(path).startswith("libblas"):
            return f"the reference BLAS ({path})", True
    info = blas_info(config)
    if info is None:
        return "an unknown BLAS (no BLAS library mapped, no BLAS_INFO in torch's configuration)", False
    return f"BLAS_INFO={info} (no BLAS library mapped)", info == "generic"


def refusal(config, maps):
    """Why PyTorch must not be timed on this machine, or None when it may."""
    what, reference = describe(config, maps)
    if not reference:
        return None
    return (f"PyTorch computes with {what}, about 18x slower than OpenBLAS on an MLP: a ratio against it "
            f"says nothing about PyTorch. {INSTALL}, then run this again")


def probe(python, env=None):
    """(config, maps) from PyTorch in `python`; exits naming why when it cannot be asked."""
    run = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, env=env, timeout=300)
    if run.returncode != 0:
        sys.exit(f"cannot ask PyTorch in {python} which BLAS it runs on: {run.stderr.strip()[-2000:]}")
    text = run.stdout
    if "=== config" not in text or "=== maps" not in text:
        sys.exit(f"{python} answered the BLAS probe without its configuration and memory map: {text[-2000:]}")
    config, maps = text.split("=== config", 1)[1].split("=== maps", 1)
    return config, maps


def check_here(torch):
    """The same for the PyTorch imported in this process (a script that times it itself)."""
    torch.matmul(torch.ones(64, 64), torch.ones(64, 64))
    config = torch.__config__.show()
    with open("/proc/self/maps") as f:
        maps = f.read()
    why = refusal(config, maps)
    if why:
        sys.exit(f"refused: {why}")
    return describe(config, maps)[0]


def check(python, env=None):
    """What PyTorch in `python` computes with; exits with the refusal on the reference BLAS."""
    config, maps = probe(python, env)
    why = refusal(config, maps)
    if why:
        sys.exit(f"refused: {why}")
    return describe(config, maps)[0]


if __name__ == "__main__":
    print(f"PyTorch computes with {check(sys.argv[1] if len(sys.argv) > 1 else '/usr/bin/python3')}")
