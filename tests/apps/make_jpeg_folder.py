#!/usr/bin/env python3
"""Writes a folder of class sub-folders of JPEGs with PIL, for im2rec and RecordIO training tests.

Class c's images are one colour of a palette (channels 100+ levels apart) with per-pixel noise
of at most 24 levels, so a network tells the classes apart within a short epoch and any crop
keeps the colour.

usage: make_jpeg_folder.py DIR IMAGES CLASSES SIZE[,SIZE...] [--odd] [--seed N]
  SIZE is WxH; image i takes size i mod len(sizes).
  --odd adds class0/gray.jpg (mode L), class0/cmyk.jpg (mode CMYK) and class1/corrupt.jpg (a
        JPEG cut in half), the cases a reader must handle or refuse."""
import argparse
import os
import random

from PIL import Image

LO, MID, HI = 28, 128, 228
PALETTE = [(HI, LO, LO), (LO, HI, LO), (LO, LO, HI), (HI, HI, LO), (HI, LO, HI),
           (LO, HI, HI), (LO, LO, LO), (HI, HI, HI), (MID, MID, MID), (HI, MID, LO)]
NOISE = 24


def noisy(size, colour, rng):
    w, h = size
    data = bytes(max(0, min(255, level + rng.randint(-NOISE, NOISE)))
                 for _ in range(w * h) for level in colour)
    return Image.frombytes("RGB", size, data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("images", type=int)
    parser.add_argument("classes", type=int)
    parser.add_argument("sizes")
    parser.add_argument("--odd", action="store_true")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    rng = random.Random(args.seed)
    for c in range(args.classes):
        os.makedirs(os.path.join(args.dir, f"class{c}"), exist_ok=True)
    for i in range(args.images):
        c = i % args.classes
        image = noisy(sizes[i % len(sizes)], PALETTE[c], rng)
        image.save(os.path.join(args.dir, f"class{c}", f"img{i:05d}.jpg"), quality=90)
    if args.odd:
        noisy((30, 20), PALETTE[0], rng).convert("L").save(os.path.join(args.dir, "class0", "gray.jpg"))
        noisy((26, 34), PALETTE[0], rng).convert("CMYK").save(os.path.join(args.dir, "class0", "cmyk.jpg"))
        path = os.path.join(args.dir, "class1", "corrupt.jpg")
        noisy((40, 40), PALETTE[1], rng).save(path, quality=90)
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])


if __name__ == "__main__":
    main()
