#!/usr/bin/env python3
"""Loads a Troupe checkpoint into PyTorch tensors without Troupe.

A checkpoint is either one file, PREFIX-EEEE.safetensors (a run in one process), or a cluster
run's PREFIX-EEEE.manifest.json and the parts it names (PREFIX-EEEE.<node>.safetensors, each
node's shard keys and replicas; docs/checkpoints.md). The safetensors format is small enough to
read by hand, which is what this does, since the `safetensors` package is not in every
distribution: 8 bytes of header length (little-endian), the JSON header, then the tensors'
bytes at their data_offsets. A cluster checkpoint's parts are checked against the manifest
(size, sha256) and their keys put back into whole parameters, so both kinds print the same.

usage: load_checkpoint.py FILE [--all]
       load_checkpoint.py --prefix PREFIX --epoch E [--all]
FILE is a .safetensors checkpoint or a .manifest.json; PREFIX and E name the checkpoint as
`troupe train --model-prefix PREFIX --load-epoch E` does (whichever kind exists).
Prints each model tensor's name, shape and dtype (with --all, the optimizer's and the other
workers' tensors too), then the weights digest line `troupe train` prints for the same weights:
"Final weights: T tensors, B bytes, digest D" (FNV-1a 64 over each parameter's name, its
extents as little-endian int64 and its float32 bytes, in the model's parameter order).
Exits 77 when PyTorch is not installed, 1 for a checkpoint it cannot read, 2 for bad usage.
"""
import hashlib
import json
import os
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


def decode(path, data):
    """Returns ({name: torch.Tensor}, metadata) of a safetensors file's bytes, in its order."""
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


def load(path):
    with open(path, "rb") as f:
        return decode(path, f.read())


def load_part(manifest_path, directory, record, epoch):
    """One part's tensors and metadata, held to the manifest's record of it."""
    path = os.path.join(directory, record["file"])
    with open(path, "rb") as f:
        data = f.read()
    if len(data) != record["bytes"]:
        raise ValueError(f"{path}: has {len(data)} bytes where the manifest {manifest_path} "
                         f"records {record['bytes']}")
    checksum = "sha256:" + hashlib.sha256(data).hexdigest()
    if checksum != record["checksum"]:
        raise ValueError(f"{path}: checksum {checksum} differs from the manifest's "
                         f"{record['checksum']} ({manifest_path})")
    tensors, metadata = decode(path, data)
    if metadata.get("troupe.kind") != "part" or metadata.get("troupe.epoch") != str(epoch):
        raise ValueError(f"{path}: not a part of epoch {epoch} ({manifest_path})")
    return tensors, metadata


def split_list(text, separator):
    return text.split(separator) if text else []


def load_manifest(path):
    """The cluster checkpoint as the one-process file would hold it: the same names, in the
    same order (parameters, worker 0's buffers, momentum/..., worker<w>/...), and metadata
    with troupe.parameters."""
    with open(path, "rb") as f:
        manifest = json.loads(f.read().decode("utf-8"))
    if manifest.get("format") != "troupe checkpoint manifest" or manifest.get("version") != 1:
        raise ValueError(f"{path}: not a version 1 Troupe checkpoint manifest")
    names = [p["name"] for p in manifest["parameters"]]
    shapes = [p["shape"] for p in manifest["parameters"]]
    weights = [torch.zeros(shape, dtype=torch.float32).reshape(-1) for shape in shapes]
    momentum = [torch.zeros(shape, dtype=torch.float32).reshape(-1) for shape in shapes]
    covered = [0] * len(names)
    replicas = {}
    directory = os.path.dirname(path)
    for record in manifest["parts"]:
        tensors, metadata = load_part(path, directory, record, manifest["epoch"])
        for shard in split_list(metadata["troupe.part.shards"], ","):
            for key in split_list(metadata[f"troupe.shard.{shard}.keys"], ","):
                slot, offset = (int(x) for x in key.split("@"))
                values = tensors[f"key/{key}"].reshape(-1)
                weights[slot][offset:offset + values.numel()] = values
                momentum[slot][offset:offset + values.numel()] = tensors[f"momentum/{key}"].reshape(-1)
                covered[slot] += values.numel()
        for worker in split_list(metadata["troupe.part.workers"], ","):
            buffers = split_list(metadata[f"troupe.worker.{worker}.buffers"], "\n")
            replicas[int(worker)] = [(b, tensors[f"worker{worker}/{b}"]) for b in buffers]
    for slot, name in enumerate(names):
        if covered[slot] != weights[slot].numel():
            raise ValueError(f"{path}: the parts cover {covered[slot]} of the "
                             f"{weights[slot].numel()} elements of {name}")
    if sorted(replicas) != list(range(manifest["workers"])):
        raise ValueError(f"{path}: the parts hold workers {sorted(replicas)}, "
                         f"the run had {manifest['workers']}")
    tensors = {}
    for name, shape, w in zip(names, shapes, weights):
        tensors[name] = w.reshape(shape)
    for buffer, value in replicas[0]:
        tensors[buffer] = value
    for name, shape, m in zip(names, shapes, momentum):
        tensors[f"momentum/{name}"] = m.reshape(shape)
    for worker in range(1, manifest["workers"]):
        for buffer, value in replicas[worker]:
            tensors[f"worker{worker}/{buffer}"] = value
    return tensors, {"troupe.parameters": "\n".join(names)}


def checkpoint_file(prefix, epoch):
    """PREFIX-EEEE.manifest.json when it exists, else PREFIX-EEEE.safetensors."""
    stem = f"{prefix}-{epoch:04d}"
    manifest, single = stem + ".manifest.json", stem + ".safetensors"
    if os.path.exists(manifest) and os.path.exists(single):
        raise ValueError(f"{single} and {manifest}: two checkpoints of epoch {epoch}")
    return manifest if os.path.exists(manifest) else single


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
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    show_all = "--all" in args
    args = [a for a in args if a != "--all"]
    if not args:
        print(__doc__)
        return 2
    if args[0] == "--prefix":
        if len(args) != 4 or args[2] != "--epoch" or not args[3].isdigit():
            print("load_checkpoint.py: expected --prefix PREFIX --epoch E", file=sys.stderr)
            return 2
    try:
        path = checkpoint_file(args[1], int(args[3])) if args[0] == "--prefix" else args[0]
        tensors, metadata = load_manifest(path) if path.endswith(".manifest.json") else load(path)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        print(f"load_checkpoint.py: {e}", file=sys.stderr)
        return 1
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
