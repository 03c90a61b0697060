#!/usr/bin/env python3
"""The PIL side of `troupe bench decode`: the same input pipeline on the same JPEGs in plain
Python, as a torchvision-style loader runs it: open, decode to RGB, a RandomResizedCrop-style
crop (scale 0.08..1, ratio 3/4..4/3, 10 tries then the centred fallback) resized to 224x224
bilinear, a random horizontal flip, to a float32 array / 255, ImageNet mean/std normalization,
HWC -> CHW. N workers are N processes (Python threads would share the GIL), each handed every
N-th file, as a DataLoader with num_workers=N would.

usage:
  bench_decode_pil.py make DIR [--images 500] [--size 500x375] [--seed 0]
      writes DIR/images/c0..c9/*.jpg: ImageNet-like photos (smooth shapes, texture, noise)
      at quality 90, to pack with `troupe im2rec DIR/data DIR/images`
  bench_decode_pil.py run DIR [--workers 1,2] [--epochs 3] [--out 224]
      prints RESULT lines (images/s, median of the epochs after a warm-up pass)
Needs python3-pil and python3-numpy (scripts/setup.sh installs them with TROUPE_WITH_TORCH=1)."""
import argparse
import math
import multiprocessing
import os
import random
import sys
import time

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def make(args):
    width, height = (int(v) for v in args.size.split("x"))
    rng = random.Random(args.seed)
    noise_rng = np.random.default_rng(args.seed)
    for i in range(args.images):
        folder = os.path.join(args.dir, "images", f"c{i % 10}")
        os.makedirs(folder, exist_ok=True)
        image = Image.new("RGB", (width, height), tuple(rng.randrange(256) for _ in range(3)))
        draw = ImageDraw.Draw(image)
        for _ in range(12):
            x, y = rng.randrange(width), rng.randrange(height)
            r = rng.randrange(20, 160)
            draw.ellipse((x - r, y - r, x + r, y + r), fill=tuple(rng.randrange(256) for _ in range(3)))
        image = image.filter(ImageFilter.GaussianBlur(2))
        noise = noise_rng.integers(-18, 19, (height, width, 3))
        pixels = np.clip(np.asarray(image, dtype=np.int16) + noise, 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(os.path.join(folder, f"img{i:05d}.jpg"), quality=90)
    print(f"wrote {args.images} {width}x{height} JPEGs under {os.path.join(args.dir, 'images')}")


def crop_box(width, height, rng):
    area = width * height
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        w = int(round(math.sqrt(target * ratio)))
        h = int(round(math.sqrt(target / ratio)))
        if 0 < w <= width and 0 < h <= height:
            x, y = rng.randint(0, width - w), rng.randint(0, height - h)
            return x, y, x + w, y + h
    w, h = width, height
    if width / height < 3 / 4:
        h = int(round(w / (3 / 4)))
    elif width / height > 4 / 3:
        w = int(round(h * 4 / 3))
    x, y = (width - w) // 2, (height - h) // 2
    return x, y, x + w, y + h


def pipeline(path, rng, out):
    with Image.open(path) as image:
        image = image.convert("RGB")
        image = image.resize((out, out), Image.BILINEAR, box=crop_box(*image.size, rng))
    if rng.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    array = (np.asarray(image, dtype=np.float32) / 255.0 - MEAN) / STD
    return np.ascontiguousarray(array.transpose(2, 0, 1))


def worker(job):
    paths, seed, out = job
    rng = random.Random(seed)
    cpu = time.process_time()
    for path in paths:
        pipeline(path, rng, out)
    return len(paths), time.process_time() - cpu


def run(args):
    root = os.path.join(args.dir, "images")
    paths = sorted(os.path.join(d, f) for d, _, files in os.walk(root) for f in files if f.endswith(".jpg"))
    if not paths:
        sys.exit(f"no JPEGs under {root}: run `bench_decode_pil.py make {args.dir}` first")
    print(f"pil: {len(paths)} images -> 3,{args.out},{args.out}, RandomResizedCrop + flip + normalize, PIL {Image.__version__}")
    one = 0.0
    for workers in (int(w) for w in args.workers.split(",")):
        with multiprocessing.Pool(workers) as pool:
            times, cpu = [], []
            for epoch in range(args.epochs + 1):  # the first pass warms the page cache
                jobs = [(paths[w::workers], epoch * 1000 + w, args.out) for w in range(workers)]
                start = time.perf_counter()
                done = pool.map(worker, jobs)
                assert sum(count for count, _ in done) == len(paths)
                if epoch > 0:
                    times.append(time.perf_counter() - start)
                    cpu.append(sum(seconds for _, seconds in done))
        median = sorted(times)[len(times) // 2]
        cpu_ms = 1e3 * sorted(cpu)[len(cpu) // 2] / len(paths)
        rate = len(paths) / median
        one = rate if workers == 1 else one
        ideal = f"  ideal {workers * one:.1f} (= {workers} x {one:.1f}), {100 * rate / (workers * one):.0f}% of it" if one and workers > 1 else ""
        print(f"RESULT pil workers={workers} images_per_s={rate:.1f} cpu_ms_per_image={cpu_ms:.2f}  (= {len(paths)} images / {median:.3f} s median of {args.epochs} epochs){ideal}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    m.add_argument("--images", type=int, default=500)
    m.add_argument("--size", default="500x375")
    m.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--workers", default="1,2")
    r.add_argument("--epochs", type=int, default=3)
    r.add_argument("--out", type=int, default=224)
    args = parser.parse_args()
    make(args) if args.command == "make" else run(args)


if __name__ == "__main__":
    main()
