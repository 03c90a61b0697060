#!/usr/bin/env python3
"""PyTorch side of the GPU training-throughput comparison: PyTorch eager (2.11 on the GPU
machine) training Troupe's zoo models on the same GPU, batch and precision as Troupe.

What it measures: training samples/s of one full step (forward, softmax cross-entropy,
backward, SGD momentum 0.9 / weight decay 1e-4 update) on synthetic data resident on the
device (a few random batches built up front and cycled, random labels, like Troupe's synthetic
dataset). Per row: `--warmup` untimed steps (which also let cudnn.benchmark pick its
algorithms), then `--steps` timed steps between two torch.cuda.synchronize() calls;
samples/s = steps * batch / seconds, ms/step = seconds / steps * 1000. With `--repeats N` the
timed window runs N times and the median is reported.

Settings (the issue's): channels_last for model and inputs, torch.backends.cudnn.benchmark =
True, precision fp32 (TF32 OFF for both matmuls and cuDNN convs unless --tf32, so fp32 is
real IEEE fp32), bf16 (torch.autocast(dtype=torch.bfloat16) over fp32 master weights, no
scaler) or fp16 (autocast float16 + GradScaler). Weight decay applies to conv / fc weights
only, not to biases or batch-norm scale/shift, as in Troupe (layer.hpp: weight_decay = false
for those).

Models (CIFAR-sized 3x32x32 input, 10 classes unless noted), built layer for layer like
graph/zoo/*.cpp, NOT like torchvision (see each builder's comment):
  resnet20, resnet110, resnet50  zoo `resnet(layers = N)` on 32x32: CIFAR design, 6n+2, basic
                                 blocks, option-A shortcuts. resnet50 is therefore the zoo's
                                 CIFAR ResNet-50 (n = 8), not the bottleneck ImageNet ResNet-50.
  vgg16                          zoo `vgg(layers = 16)`, CIFAR head
  inception_bn                   zoo `inception_bn()` on 32x32: MXNet inception-bn-28-small
  lenet, mlp                     zoo `lenet()` / `mlp()` on 1x28x28 (extras, not in the issue)
Each row prints the PyTorch parameter count beside the zoo's. The zoo's count is what
`troupe check CONFIG` prints on its `plan:` line ("... N parameters"), e.g. with

  cluster   { servers = 1  workers = 1 }
  data      train = synthetic(shape = [3, 32, 32], classes = 10, examples = 1024, batch = 128)
  model     resnet(layers = 50)
  optimizer sgd(lr = 0.1, momentum = 0.9, wd = 1e-4)
  train     { epochs = 1 }

(`troupe bench` prints it as params=N too, for the models it knows). The counts in ZOO_PARAMS
below were taken that way; a mismatch is flagged in the table with "!".

Run on the GPU machine (PyTorch 2.11 with CUDA):
  python3 scripts/bench_pytorch_gpu.py --device cuda:0 --json torch_gpu.jsonl
  python3 scripts/bench_pytorch_gpu.py --models resnet20,resnet110,resnet50,vgg16,inception_bn \\
      --batches 128,512 --dtypes fp32,bf16 --warmup 10 --steps 50 --device cuda:0 --json OUT
CPU smoke test (checks the models build, train a few steps and have the zoo's counts):
  python3 scripts/bench_pytorch_gpu.py --device cpu --batches 8 --warmup 1 --steps 2

Output: a plain table on stdout; with --json OUT one JSON object per line per row (model,
batch, dtype, samples_per_s, ms_per_step, params, zoo_params, device name, torch and cuDNN
versions, settings). A row that fails (out of memory, ...) prints its error and the run goes
on; its JSON line carries "error" and null figures.

torch is imported only after the arguments are parsed, so --help works without it.
"""
import argparse
import json
import os
import statistics
import sys
import time

# Parameter counts of the zoo models, as `troupe check` prints them (10 classes).
ZOO_PARAMS = {
    "resnet20": 269_722,
    "resnet110": 1_727_962,
    "resnet50": 755_802,
    "vgg16": 14_728_266,
    "inception_bn": 1_652_826,
    "lenet": 3_274_634,
    "mlp": 109_386,
}

# Sample shape per model (C, H, W).
SAMPLE_SHAPE = {
    "resnet20": (3, 32, 32),
    "resnet110": (3, 32, 32),
    "resnet50": (3, 32, 32),
    "vgg16": (3, 32, 32),
    "inception_bn": (3, 32, 32),
    "lenet": (1, 28, 28),
    "mlp": (1, 28, 28),
}

DTYPES = ("fp32", "bf16", "fp16")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description="PyTorch eager training throughput for Troupe's zoo models (see the "
                    "module docstring).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="models: " + ", ".join(ZOO_PARAMS) + "; dtypes: " + ", ".join(DTYPES))
    ap.add_argument("--models", default="resnet20,resnet110,resnet50,vgg16,inception_bn",
                    help="comma-separated model names (default: %(default)s)")
    ap.add_argument("--batches", default="128,512",
                    help="comma-separated batch sizes (default: %(default)s)")
    ap.add_argument("--dtypes", default="fp32,bf16",
                    help="comma-separated: fp32, bf16, fp16 (default: %(default)s)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps (default: %(default)s)")
    ap.add_argument("--steps", type=int, default=50, help="timed steps (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="timed windows per row; the median is reported (default: %(default)s)")
    ap.add_argument("--device", default="cuda:0", help="cuda:N, or cpu for a smoke test")
    ap.add_argument("--json", metavar="OUT", help="append one JSON line per row to OUT")
    ap.add_argument("--classes", type=int, default=10, help="classes (default: %(default)s)")
    ap.add_argument("--lr", type=float, default=0.1, help="SGD learning rate")
    ap.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    ap.add_argument("--wd", type=float, default=1e-4,
                    help="weight decay on conv / fc weights (default: %(default)s)")
    ap.add_argument("--sgd-impl", choices=("default", "foreach", "fused", "loop"),
                    default="default",
                    help="torch.optim.SGD implementation: PyTorch's default choice (foreach "
                         "on CUDA), or forced (default: %(default)s)")
    ap.add_argument("--tf32", action="store_true",
                    help="allow TF32 in fp32 matmuls and convs (off by default: real fp32)")
    ap.add_argument("--no-channels-last", action="store_true",
                    help="keep NCHW (contiguous) instead of channels_last")
    ap.add_argument("--no-cudnn-benchmark", action="store_true",
                    help="leave torch.backends.cudnn.benchmark off")
    ap.add_argument("--distinct-batches", type=int, default=4,
                    help="random batches built on the device and cycled (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=1, help="torch.manual_seed (default: %(default)s)")
    a = ap.parse_args(argv)
    a.models = [m.strip() for m in a.models.split(",") if m.strip()]
    a.batches = [int(b) for b in a.batches.split(",") if b.strip()]
    a.dtypes = [d.strip() for d in a.dtypes.split(",") if d.strip()]
    for m in a.models:
        if m not in ZOO_PARAMS:
            ap.error(f"--models: unknown model '{m}' (known: {', '.join(ZOO_PARAMS)})")
    for d in a.dtypes:
        if d not in DTYPES:
            ap.error(f"--dtypes: unknown dtype '{d}' (known: {', '.join(DTYPES)})")
    if not a.models or not a.batches or not a.dtypes:
        ap.error("--models, --batches and --dtypes need at least one entry each")
    if a.steps < 1 or a.warmup < 0 or a.repeats < 1 or a.distinct_batches < 1:
        ap.error("need --steps >= 1, --warmup >= 0, --repeats >= 1, --distinct-batches >= 1")
    return a


def build_models(torch):
    """Defines the zoo's networks in torch.nn; returns {name: constructor(classes)}.

    Kept inside a function so the module imports (and --help runs) without torch.
    """
    nn = torch.nn
    F = torch.nn.functional

    def he_normal_(module):
        # Troupe: N(0, sqrt(2 / fan_in)) for conv and fc weights (kaiming_normal_ fan_in, relu),
        # biases 0, BN gamma 1 / beta 0. Only the starting point; it does not change the speed.
        nn.init.kaiming_normal_(module.weight, mode="fan_in", nonlinearity="relu")
        if module.bias is not None:
            nn.init.zeros_(module.bias)

    def xavier_uniform_(module):
        nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)

    def init_weights(model, fc_init):
        for mod in model.modules():
            if isinstance(mod, nn.Conv2d):
                he_normal_(mod)
            elif isinstance(mod, nn.Linear):
                fc_init(mod)
            elif isinstance(mod, nn.BatchNorm2d):
                nn.init.ones_(mod.weight)
                nn.init.zeros_(mod.bias)
        return model

    def conv_bn(cin, cout, kernel, stride=1, pad=0, bias=False, relu=True):
        """zoo_builders.hpp add_conv_bn: conv, batch norm (eps 1e-5, momentum 0.1, as
        kernels/batch_norm.hpp), optional ReLU."""
        layers = [nn.Conv2d(cin, cout, kernel, stride, pad, bias=bias), nn.BatchNorm2d(cout)]
        if relu:
            layers.append(nn.ReLU(inplace=True))
        return nn.Sequential(*layers)

    # --- ResNet (graph/zoo/resnet.cpp) ------------------------------------------------------

    class ShortcutPad(nn.Module):
        """Option-A shortcut (kernels elementwise.hpp shortcut_pad): y[n, c + front, h, w] =
        x[n, c, h*stride, w*stride], zero elsewhere; front = (out - C) // 2, the rest at the
        back. No parameters."""

        def __init__(self, cin, cout, stride):
            super().__init__()
            self.stride, self.front, self.back = stride, (cout - cin) // 2, cout - cin - (cout - cin) // 2

        def forward(self, x):
            channels_last = x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) \
                and not x.is_contiguous()
            y = x[:, :, ::self.stride, ::self.stride]
            y = F.pad(y, (0, 0, 0, 0, self.front, self.back))
            # Keep the residual add in one memory format (F.pad may hand back NCHW).
            return y.contiguous(memory_format=torch.channels_last) if channels_last else y

    class BasicBlock(nn.Module):
        """resnet.cpp basic_block: conv3x3(stride)-bn-relu-conv3x3-bn, + shortcut, relu.
        Shortcut: identity, or option A (CIFAR) where the shape changes."""

        def __init__(self, cin, width, stride):
            super().__init__()
            self.body = nn.Sequential(conv_bn(cin, width, 3, stride, 1),
                                      conv_bn(width, width, 3, 1, 1, relu=False))
            self.shortcut = ShortcutPad(cin, width, stride) \
                if stride != 1 or cin != width else nn.Identity()

        def forward(self, x):
            return F.relu(self.body(x) + self.shortcut(x), inplace=True)

    class CifarResNet(nn.Module):
        """resnet.cpp build_cifar_resnet (inputs up to 32x32): depth 6n+2, conv3x3 16 + BN +
        ReLU, three stages of n basic blocks of 16/32/64 channels (stride 2 entering stages 2
        and 3), global average pool, fc (He-normal). Convs without bias.

        Differs from torchvision (which has no CIFAR ResNets): option-A shortcuts, as in the
        paper. For depth 50 the zoo builds this design too (n = 8, 755,802 parameters), since
        it picks the design by input size, not depth: the bottleneck ResNet-50 exists in the zoo
        only for inputs larger than 32x32 (7x7/2 stem + max pool, 25.5M parameters)."""

        def __init__(self, depth, classes):
            super().__init__()
            if depth < 8 or (depth - 2) % 6:
                raise ValueError(f"CIFAR resnet needs depth 6n+2, got {depth}")
            n = (depth - 2) // 6
            self.stem = conv_bn(3, 16, 3, 1, 1)
            blocks, cin = [], 16
            for stage in range(3):
                width = 16 << stage
                for b in range(n):
                    blocks.append(BasicBlock(cin, width, 2 if stage > 0 and b == 0 else 1))
                    cin = width
            self.blocks = nn.Sequential(*blocks)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, classes)
            init_weights(self, he_normal_)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))

    # --- VGG (graph/zoo/vgg.cpp) ------------------------------------------------------------

    VGG_CONFIG = {  # output channels per conv, 0 = 2x2/2 max pool (the paper's A, B, D, E)
        11: [64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0],
        13: [64, 64, 0, 128, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0],
        16: [64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0],
        19: [64, 64, 0, 128, 128, 0, 256, 256, 256, 256, 0, 512, 512, 512, 512, 0,
             512, 512, 512, 512, 0],
    }

    class CifarVGG(nn.Module):
        """vgg.cpp on 32x32: 3x3 pad 1 convs WITH bias + BN + ReLU, 2x2/2 max pools; after
        five pools 512x1x1 -> flatten -> fc 512 -> classes (Xavier-uniform). No dropout and no
        fc-4096 layers on the CIFAR head (those are the 224x224 head only).

        Differs from torchvision's vgg16_bn: CIFAR head (single fc), no adaptive 7x7 pool."""

        def __init__(self, depth, classes):
            super().__init__()
            layers, cin = [], 3
            for c in VGG_CONFIG[depth]:
                if c == 0:
                    layers.append(nn.MaxPool2d(2, 2))
                else:
                    layers.append(conv_bn(cin, c, 3, 1, 1, bias=True))
                    cin = c
            self.features = nn.Sequential(*layers)
            self.fc = nn.Linear(cin, classes)  # 512 x 1 x 1 after five pools on 32x32
            # Convs He-normal, fc Xavier-uniform (vgg.cpp).
            init_weights(self, xavier_uniform_)

        def forward(self, x):
            return self.fc(torch.flatten(self.features(x), 1))

    # --- Inception-BN (graph/zoo/inception_bn.cpp) ------------------------------------------

    def unit(cin, cout, kernel, stride=1, pad=0):
        """inception_bn.cpp unit: conv (MXNet's default bias kept) + BN + ReLU."""
        return conv_bn(cin, cout, kernel, stride, pad, bias=True)

    class SimpleUnit(nn.Module):
        """1x1 and 3x3 branches, concatenated on channels (1x1 first)."""

        def __init__(self, cin, ch_1x1, ch_3x3):
            super().__init__()
            self.a = unit(cin, ch_1x1, 1)
            self.b = unit(cin, ch_3x3, 3, 1, 1)
            self.out_channels = ch_1x1 + ch_3x3

        def forward(self, x):
            return torch.cat([self.a(x), self.b(x)], 1)

    class DownsampleUnit(nn.Module):
        """3x3/2 pad 1 conv and 3x3/2 pad 1 max pool, concatenated (conv first). The pool pads
        by 1 (zoo), so both branches give 16 from 32 and 8 from 16."""

        def __init__(self, cin, ch_3x3):
            super().__init__()
            self.a = unit(cin, ch_3x3, 3, 2, 1)
            self.b = nn.MaxPool2d(3, 2, 1)
            self.out_channels = ch_3x3 + cin

        def forward(self, x):
            return torch.cat([self.a(x), self.b(x)], 1)

    class InceptionBNSmall(nn.Module):
        """inception_bn.cpp build_small (inputs up to 32x32): MXNet's inception-bn-28-small.
        stem 3x3 96; (32,32) (32,48) down 80 | (112,48) (96,64) (80,80) (48,96) down 96 |
        (176,160) (176,160); global average pool; fc (He-normal). No torchvision counterpart."""

        def __init__(self, classes):
            super().__init__()
            layers = [unit(3, 96, 3, 1, 1)]
            cin = 96
            plan = [("s", 32, 32), ("s", 32, 48), ("d", 80),
                    ("s", 112, 48), ("s", 96, 64), ("s", 80, 80), ("s", 48, 96), ("d", 96),
                    ("s", 176, 160), ("s", 176, 160)]
            for step in plan:
                block = SimpleUnit(cin, step[1], step[2]) if step[0] == "s" \
                    else DownsampleUnit(cin, step[1])
                layers.append(block)
                cin = block.out_channels
            self.features = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, classes)
            init_weights(self, he_normal_)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(self.features(x)), 1))

    # --- LeNet and MLP (graph/zoo/lenet.cpp, mlp.cpp), 1x28x28 --------------------------------

    class LeNet(nn.Module):
        """lenet.cpp: conv 5x5x32 pad 2 (bias) + ReLU, 2x2 max pool, conv 5x5x64 pad 2 + ReLU,
        2x2 max pool, fc 1024 + ReLU, fc classes. No batch norm. Convs He, fc Xavier."""

        def __init__(self, classes, in_hw=28):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 32, 5, 1, 2), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
                nn.Conv2d(32, 64, 5, 1, 2), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2))
            hw = in_hw // 4
            self.fc1 = nn.Linear(64 * hw * hw, 1024)
            self.fc2 = nn.Linear(1024, classes)
            init_weights(self, xavier_uniform_)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(torch.flatten(self.features(x), 1)), inplace=True))

    class Mlp(nn.Module):
        """mlp.cpp: flatten, fc 128 + ReLU, fc 64 + ReLU, fc classes (Xavier-uniform)."""

        def __init__(self, classes, in_features=28 * 28):
            super().__init__()
            self.net = nn.Sequential(nn.Flatten(), nn.Linear(in_features, 128), nn.ReLU(inplace=True),
                                     nn.Linear(128, 64), nn.ReLU(inplace=True),
                                     nn.Linear(64, classes))
            init_weights(self, xavier_uniform_)

        def forward(self, x):
            return self.net(x)

    return {
        "resnet20": lambda classes: CifarResNet(20, classes),
        "resnet110": lambda classes: CifarResNet(110, classes),
        "resnet50": lambda classes: CifarResNet(50, classes),
        "vgg16": lambda classes: CifarVGG(16, classes),
        "inception_bn": InceptionBNSmall,
        "lenet": LeNet,
        "mlp": Mlp,
    }


def set_tf32(torch, enabled):
    """TF32 for fp32 matmuls and cuDNN convs. PyTorch >= 2.9 has the fp32_precision API (the
    allow_tf32 flags are deprecated there, and mixing the two APIs can raise); older versions
    only the flags. Returns a description of what was set."""
    if hasattr(torch.backends, "fp32_precision"):
        mode = "tf32" if enabled else "ieee"
        torch.backends.cuda.matmul.fp32_precision = mode
        torch.backends.cudnn.conv.fp32_precision = mode
        return f"matmul.fp32_precision={mode} cudnn.conv.fp32_precision={mode}"
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    return f"matmul.allow_tf32={enabled} cudnn.allow_tf32={enabled}"


def make_optimizer(torch, model, a, device):
    """SGD momentum with weight decay on conv / fc weights only (Troupe exempts biases and
    batch-norm scale/shift)."""
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    kwargs = {}
    if a.sgd_impl == "foreach":
        kwargs["foreach"] = True
    elif a.sgd_impl == "loop":
        kwargs["foreach"] = False
    elif a.sgd_impl == "fused":
        kwargs["fused"] = True
    return torch.optim.SGD([{"params": decay, "weight_decay": a.wd},
                            {"params": no_decay, "weight_decay": 0.0}],
                           lr=a.lr, momentum=a.momentum, **kwargs)


def make_scaler(torch, device):
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device.type)
    return torch.cuda.amp.GradScaler(enabled=device.type == "cuda")  # PyTorch < 2.3


def run_row(torch, builders, name, batch, dtype, a, device):
    """Builds the model, trains warm-up + timed steps; returns the row's figures."""
    F = torch.nn.functional
    torch.manual_seed(a.seed)
    memory_format = torch.contiguous_format if a.no_channels_last else torch.channels_last
    model = builders[name](a.classes).to(device).to(memory_format=memory_format)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    opt = make_optimizer(torch, model, a, device)
    shape = SAMPLE_SHAPE[name]
    xs = [torch.randn(batch, *shape, device=device).contiguous(memory_format=memory_format)
          for _ in range(a.distinct_batches)]
    ys = [torch.randint(0, a.classes, (batch,), device=device)
          for _ in range(a.distinct_batches)]
    amp_dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    scaler = make_scaler(torch, device) if dtype == "fp16" else None

    def step(i):
        x, y = xs[i % len(xs)], ys[i % len(ys)]
        opt.zero_grad(set_to_none=True)
        if amp_dtype is None:
            loss = F.cross_entropy(model(x), y)
        else:
            with torch.autocast(device_type=device.type, dtype=amp_dtype):
                loss = F.cross_entropy(model(x), y)  # autocast runs the loss in fp32
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return loss

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    i = 0
    for _ in range(a.warmup):
        step(i)
        i += 1
    sync()
    windows = []
    for _ in range(a.repeats):
        sync()
        start = time.perf_counter()
        for _ in range(a.steps):
            loss = step(i)
            i += 1
        sync()
        windows.append(time.perf_counter() - start)
    seconds = statistics.median(windows)
    final_loss = float(loss.detach().float().item())
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    return {
        "samples_per_s": a.steps * batch / seconds,
        "ms_per_step": 1000.0 * seconds / a.steps,
        "params": params,
        "final_loss": final_loss,
        "peak_mem_bytes": peak,
        "window_s": windows,
    }


def main(argv=None):
    a = parse_args(argv)

    import torch  # lazy: --help and argument errors need no torch

    device = torch.device(a.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit(f"{a.device}: CUDA is not available to this PyTorch ({torch.__version__})")
        torch.cuda.set_device(device)
        device_name = torch.cuda.get_device_name(device)
    else:
        import platform
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import torch_blas  # on the CPU, never time PyTorch on the reference BLAS
        device_name = (platform.processor() or platform.machine() or "cpu") + ", " + torch_blas.check_here(torch)
    torch.backends.cudnn.benchmark = not a.no_cudnn_benchmark
    tf32_setting = set_tf32(torch, a.tf32)
    cudnn_version = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    builders = build_models(torch)

    settings = {
        "channels_last": not a.no_channels_last,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "tf32": a.tf32,
        "tf32_setting": tf32_setting,
        "sgd": {"lr": a.lr, "momentum": a.momentum, "wd": a.wd, "impl": a.sgd_impl},
        "warmup": a.warmup,
        "steps": a.steps,
        "repeats": a.repeats,
        "distinct_batches": a.distinct_batches,
    }
    print(f"# PyTorch {torch.__version__}, cuDNN {cudnn_version}, device {a.device} "
          f"({device_name}); channels_last={settings['channels_last']} "
          f"cudnn.benchmark={settings['cudnn_benchmark']} fp32 TF32={a.tf32} ({tf32_setting}); "
          f"warmup {a.warmup}, steps {a.steps} x {a.repeats}", flush=True)
    header = (f"{'model':<13} {'batch':>5} {'dtype':<5} {'samples/s':>11} {'ms/step':>9} "
              f"{'params':>11} {'zoo params':>11} {'peak MiB':>9}")
    print(header)
    print("-" * len(header), flush=True)
    out = open(a.json, "a") if a.json else None
    failures = 0
    try:
        for name in a.models:
            for batch in a.batches:
                for dtype in a.dtypes:
                    row = {"model": name, "batch": batch, "dtype": dtype,
                           "framework": "pytorch-eager", "device": a.device,
                           "device_name": device_name, "torch": torch.__version__,
                           "cudnn": cudnn_version, "zoo_params": ZOO_PARAMS[name], **settings}
                    try:
                        row.update(run_row(torch, builders, name, batch, dtype, a, device))
                        mark = "" if row["params"] == ZOO_PARAMS[name] else "!"
                        peak = row["peak_mem_bytes"]
                        peak_text = f"{peak / 2**20:9.0f}" if peak is not None else f"{'-':>9}"
                        print(f"{name:<13} {batch:>5} {dtype:<5} {row['samples_per_s']:>11.1f} "
                              f"{row['ms_per_step']:>9.3f} {row['params']:>11,}"
                              f"{mark:1}{ZOO_PARAMS[name]:>10,} {peak_text}", flush=True)
                    except Exception as e:  # noqa: BLE001 - OOM and friends: report, go on
                        failures += 1
                        row.update({"samples_per_s": None, "ms_per_step": None, "params": None,
                                    "error": f"{type(e).__name__}: {e}"})
                        first_line = str(e).strip().splitlines()[0] if str(e).strip() else ""
                        print(f"{name:<13} {batch:>5} {dtype:<5} FAILED: {type(e).__name__}: "
                              f"{first_line}", flush=True)
                    finally:
                        import gc
                        gc.collect()
                        if device.type == "cuda":
                            torch.cuda.empty_cache()
                    if out:
                        out.write(json.dumps(row) + "\n")
                        out.flush()
    finally:
        if out:
            out.close()
    if failures:
        print(f"# {failures} row(s) failed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
