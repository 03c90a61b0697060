#!/usr/bin/env bash
# Issue 9's must-shows on a GPU machine, from the bundle scripts/gpu_bundle.sh made: unpacks it,
# finds the machine's CUDA, cuDNN and cuBLAS libraries (system ones, or PyTorch's pip wheels),
# and runs, writing each log into OUT_DIR:
#   1. cuda_tests.log   the CUDA test suite (kernels:cuda)
#   2. train_gpu.log    LeNet on Fashion-MNIST, 10 epochs, defaults, --devices gpu:0
#      bsp_1x64.log / bsp_2x32.log  BSP in one process: 1 compute at batch 64 against 2
#                       computes sharing gpu:0 at batch 32 (compare the weights digests)
#   3. bench_troupe.log troupe's step on the GPU for the zoo's CIFAR models at batch 128 and 512
#      bench_torch.jsonl PyTorch eager on the same models (scripts/bench_pytorch_gpu.py)
#   4. e2e.log          ResNet-20 trained through the actors on the GPU beside the bare step
# Usage: gpu_verify.sh BUNDLE.tar.xz OUT_DIR [PARTS]   (PARTS: e.g. "1 2", default "1 2 3 4")
set -uo pipefail
bundle="$1"
out="$2"
parts="${3:-1 2 3 4}"
work="$(mktemp -d)"
tar -C "$work" -xJf "$bundle"
home="$work/troupe-gpu"
libs="$home/lib"
# cuDNN and cuBLAS: the system's if the loader finds them, else PyTorch's wheels.
for module in nvidia.cudnn nvidia.cublas nvidia.cuda_runtime nvidia.cu13; do
  dir="$(python3 -c "import $module, os; print(os.path.dirname($module.__file__ or list($module.__path__)[0]))" 2>/dev/null || true)"
  [[ -n "$dir" && -d "$dir/lib" ]] && libs="$libs:$dir/lib"
done
export LD_LIBRARY_PATH="$libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
troupe="$home/bin/troupe"
mkdir -p "$out"
{ nvidia-smi; ldd "$troupe"; "$troupe" devices; } > "$out/machine.log" 2>&1
data="--data-dir $home/data/fashion-mnist"
for part in $parts; do
  case "$part" in
  1) "$home/bin/troupe_cuda_tests" --durations yes > "$out/cuda_tests.log" 2>&1
     echo "part 1: exit $?" ;;
  2) "$troupe" train --devices gpu:0 $data --progress off > "$out/train_gpu.log" 2>&1
     echo "part 2 (train): exit $?"
     # The BSP pair (the property itself, to float32 rounding, is tested in kernels:cuda:
     # tests/actors/cuda/compute_gpu_test.cpp); here the logs give both runs' accuracy.
     for run in "1 64" "2 32"; do
       set -- $run
       cat > "$work/bsp_$1.troupe" <<CONFIG
cluster   { servers = 1  workers = $1 }
data      train = fashion_mnist("$home/data/fashion-mnist", split = "train", batch = $2)
data      val   = fashion_mnist("$home/data/fashion-mnist", split = "test",  batch = 500)
model     lenet(classes = 10)
optimizer sgd(lr = 0.05, momentum = 0.9, wd = 1e-4, nesterov = false)
schedule  multi_step(steps = [5, 7.5], factor = 0.1, warmup = 1)
topology  bsp {
  loader    -> compute
  compute   -> aggregate(all)
  aggregate -> shard
  shard     -> compute(all)
}
train     { epochs = 10  eval_every = 1  seed = 0  devices = ["gpu:0"] }
CONFIG
       "$troupe" train --config "$work/bsp_$1.troupe" --progress off > "$out/bsp_${1}x${2}.log" 2>&1
       echo "part 2 (bsp $1 x $2): exit $?"
     done ;;
  3) for batch in 128 512; do
       "$troupe" bench --device gpu:0 --batch-size "$batch" --steps 50 --warmup 10 \
         --models resnet-20,resnet-110,resnet-50,vgg-16,inception-bn >> "$out/bench_troupe.log" 2>&1
     done
     echo "part 3 (troupe): exit $?"
     python3 "$home/scripts/bench_pytorch_gpu.py" --device cuda:0 --json "$out/bench_torch.jsonl" \
       > "$out/bench_torch.log" 2>&1
     echo "part 3 (torch): exit $?" ;;
  4) "$troupe" bench --device gpu:0 --end-to-end --models resnet-20 --batch-size 128 --epochs 3 \
       > "$out/e2e.log" 2>&1
     echo "part 4: exit $?" ;;
  *) echo "gpu_verify: unknown part '$part' (1-4)" >&2; exit 2 ;;
  esac
done
rm -rf "$work"
