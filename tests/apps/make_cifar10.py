#!/usr/bin/env python3
"""Writes a small CIFAR-10 binary set (data_batch_1..5.bin, test_batch.bin) in the exact
on-disk format: per record 1 label byte then 3072 pixel bytes (R, G, B planes of 32x32).
Each class is one colour of a palette whose colours differ by 100 levels in at least one
channel, with per-pixel noise of at most 24 levels, so a network reaches well above chance
(0.1) within one short epoch; crop and mirror augmentation leave a colour unchanged.
usage: make_cifar10.py DIR RECORDS_PER_FILE [SEED]"""
import os
import random
import sys

out, per_file = sys.argv[1], int(sys.argv[2])
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 7
# (R, G, B) levels per class: the eight corners of {28, 228}^3, mid grey and orange.
LO, MID, HI = 28, 128, 228
PALETTE = [(LO, LO, LO), (HI, LO, LO), (LO, HI, LO), (LO, LO, HI), (HI, HI, LO),
           (HI, LO, HI), (LO, HI, HI), (HI, HI, HI), (MID, MID, MID), (HI, MID, LO)]
NOISE = 24

os.makedirs(out, exist_ok=True)
rng = random.Random(seed)
names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
for name in names:
    records = bytearray()
    for _ in range(per_file):
        label = rng.randrange(10)
        records.append(label)
        for level in PALETTE[label]:
            records.extend(level + rng.randint(-NOISE, NOISE) for _ in range(1024))
    with open(os.path.join(out, name), "wb") as f:
        f.write(records)
