#!/usr/bin/env python3
"""Writes a small CIFAR-10 binary set (data_batch_1..5.bin, test_batch.bin) in the exact
on-disk format: per record 1 label byte then 3072 pixel bytes (R, G, B planes of 32x32).
Each class gets its own colour bias so a network can learn something.
usage: make_cifar10.py DIR RECORDS_PER_FILE"""
import os
import random
import sys

out, per_file = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
rng = random.Random(7)
names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
for name in names:
    records = bytearray()
    for _ in range(per_file):
        label = rng.randrange(10)
        records.append(label)
        for channel in range(3):
            base = 40 + 20 * ((label + channel * 3) % 10)
            records.extend(min(255, base + rng.randrange(16)) for _ in range(1024))
    with open(os.path.join(out, name), "wb") as f:
        f.write(records)
