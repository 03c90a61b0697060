#!/usr/bin/python3
"""The PyTorch side of `bench_vs_torch.py`: training images/s of one model, measured the way
`troupe bench` measures Troupe (same model, batch, threads, warm-up, timed steps, data).

Models: mlp (784-128-64-10), lenet (conv5x5x32 pad 2, pool, conv5x5x64 pad 2, pool, fc1024,
fc10) and resnet-20 (CIFAR, option-A shortcuts, batch norm). SGD momentum 0.9, lr 0.05.
Prints one line: RESULT model=... imgs_per_s=... step_ms=...
Run with Debian's /usr/bin/python3 (python3-torch). Refuses to time PyTorch on the reference
BLAS (scripts/torch_blas.py).
"""
import argparse
import gzip
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import sys  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_blas  # noqa: E402  (which BLAS PyTorch runs on)


def read_idx_gz(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    rank = raw[3]
    dims = struct.unpack(">" + "I" * rank, raw[4:4 + 4 * rank])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * rank).reshape(dims)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 128), nn.Linear(128, 64), nn.Linear(64, 10)

    def forward(self, x):
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 5, padding=2), nn.Conv2d(32, 64, 5, padding=2)
        self.fc1, self.fc2 = nn.Linear(3136, 1024), nn.Linear(1024, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.stride, self.extra = stride, cout - cin

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        s = x
        if self.stride != 1 or self.extra:
            s = F.pad(x[:, :, ::self.stride, ::self.stride],
                      (0, 0, 0, 0, self.extra // 2, self.extra - self.extra // 2))
        return F.relu(y + s)


class ResNet20(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16)
        blocks, cin = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                blocks.append(Block(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.blocks(F.relu(self.bn(self.conv(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


MODELS = {"mlp": Mlp, "lenet": LeNet, "resnet-20": ResNet20}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    steps = a.steps or {"mlp": 500, "lenet": 50, "resnet-20": 40}[a.model]
    torch.set_num_threads(a.threads)
    torch_blas.check_here(torch)
    torch.manual_seed(0)
    model = MODELS[a.model]()
    B, n = a.batch_size, a.warmup + steps
    if a.model == "resnet-20":
        xs, ys = torch.randn(4, B, 3, 32, 32), torch.randint(0, 10, (4, B))
        batch = lambda i: (xs[i % 4], ys[i % 4])
    else:
        # Same images, same order and same normalization as `troupe bench`.
        images = read_idx_gz(os.path.join(a.data_dir, "train-images-idx3-ubyte.gz"))
        labels = read_idx_gz(os.path.join(a.data_dir, "train-labels-idx1-ubyte.gz"))
        idx = np.arange(n * B) % images.shape[0]
        x = (torch.from_numpy(images[idx].astype(np.float32) / 255.0) - 0.2860) / 0.3530
        xs, ys = x.reshape(n, B, 1, 28, 28), torch.from_numpy(labels[idx].astype(np.int64)).reshape(n, B)
        batch = lambda i: (xs[i], ys[i])
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    model.train()

    def step(i):
        x, y = batch(i)
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    for i in range(a.warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(a.warmup, n):
        step(i)
    dt = time.perf_counter() - t0
    params = sum(p.numel() for p in model.parameters())
    print(f"RESULT model={a.model} mode=train batch={B} threads={torch.get_num_threads()} "
          f"params={params} steps={steps} imgs_per_s={steps * B / dt:.1f} "
          f"step_ms={1000 * dt / steps:.3f}", flush=True)


if __name__ == "__main__":
    main()
