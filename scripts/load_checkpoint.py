#!/usr/bin/env python3
"""Loads a Troupe checkpoint (PREFIX-EEEE.safetensors) into PyTorch tensors without Troupe.

The safetensors format (docs/checkpoints.md) is small enough to read by hand, which is what
this does, since the `safetensors` package is not in every distribution: 8 bytes of header
length (little-endian), the JSON header, then the tensors' bytes at their data_offsets.

usage: load_checkpoint.py FILE [--all]
Prints each model tensor's name, shape and dtype (with --all, the optimizer's and the other
workers' tensors too), then the weights digest line `troupe train` prints for the same weights:
"Final weights: T tensors, B bytes, digest D" (FNV-1a 64 over each parameter's name, its
extents as little-endian int64 and its float32 bytes, in the model's parameter order).
Exits 77 when PyTorch is not installed, 1 for a file it cannot read.
"""
import json
import struct
import sys

try:
    import torch
except ImportError:
    print("load_checkpoint.py: PyTorch (python3-torch) is not installed", file=sys.stderr)
    sys.exit(77)

FNV_OFFSET = 14695981039346656037
FNV_PRIME = 1099511628211
MASK = (1 << 64) - 1


def load(path):
    """Returns ({name: torch.Tensor}, metadata) in the file's order."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (length,) = struct.unpack("<Q", data[:8])
    if 8 + length > len(data):
        raise ValueError(f"{path}: the header runs past the end of the file")
    header = json.loads(data[8:8 + length].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    buffer = memoryview(data)[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name} has dtype {entry['dtype']}, expected F32")
        begin, end = entry["data_offsets"]
        values = torch.frombuffer(bytearray(buffer[begin:end]), dtype=torch.float32)
        tensors[name] = values.reshape(entry["shape"])
    return tensors, metadata


def digest(names, tensors):
    h = FNV_OFFSET
    total = 0
    for name in names:
        t = tensors[name]
        raw = name.encode() + b"".join(struct.pack("<q", d) for d in t.shape)
        raw += t.contiguous().numpy().tobytes()
        total += t.numel() * 4
        for byte in raw:
            h = ((h ^ byte) * FNV_PRIME) & MASK
    return f"Final weights: {len(names)} tensors, {total} bytes, digest {h:016x}"


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    try:
        tensors, metadata = load(sys.argv[1])
    except (OSError, ValueError, KeyError) as e:
        print(f"load_checkpoint.py: {e}", file=sys.stderr)
        return 1
    show_all = "--all" in sys.argv[2:]
    for name, t in tensors.items():
        if show_all or "/" not in name:
            print(f"{name}\t{list(t.shape)}\t{t.dtype}")
    # The model's parameters, in its order; a file from elsewhere: every tensor.
    names = metadata.get("troupe.parameters", "").split("\n") if "troupe.parameters" in metadata \
        else [n for n in tensors if "/" not in n]
    print(digest(names, tensors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
