#!/usr/bin/env bash
# The GPU must-shows on a GPU machine, from the bundle scripts/gpu_bundle.sh made: unpacks it,
# finds the machine's CUDA, cuDNN and cuBLAS libraries (system ones, or PyTorch's pip wheels),
# and runs, writing each log into OUT_DIR:
#   1. cuda_tests.log   the CUDA test suite (kernels:cuda)
#   2. train_gpu.log    LeNet on Fashion-MNIST, 10 epochs, defaults, --devices gpu:0
#      bsp_1x64.log / bsp_2x32.log  BSP in one process: 1 compute at batch 64 against 2
#                       computes sharing gpu:0 at batch 32 (compare the weights digests)
#   3. bench_troupe.log troupe's step on the GPU for the zoo's CIFAR models at batch 128 and 512
#      bench_torch.log  PyTorch eager on the same models, fp32 (scripts/bench_pytorch_gpu.py)
# Eight logs at most, so that all of them fit what a device call brings back.
#   4. e2e.log          ResNet-20 trained through the actors on the GPU beside the bare step
# Usage: gpu_verify.sh BUNDLE.tar.xz OUT_DIR [PARTS]   (PARTS: e.g. "1 2", default "1 2 3 4")
#
# Device time is short and one call must come back: every command runs under `timeout`
# (seconds per part below, GPU_VERIFY_SCALE multiplies them all), parts 1 and 2 only check
# results, so they run side by side; parts 3 and 4 time things and run alone, after them.
# The last lines printed sum up every log (exit statuses, accuracies, tails).
# GPU_VERIFY_TEST_ARGS: more arguments for the CUDA test executable (e.g. -s to print every
# assertion's values, or a test name).
set -uo pipefail
bundle="$1"
out="$2"
parts="${3:-1 2 3 4}"
scale="${GPU_VERIFY_SCALE:-1}"
limit() { echo $(($1 * scale)); }
work="$(mktemp -d)"
tar -C "$work" -xJf "$bundle" || { echo "gpu_verify: cannot unpack $bundle" >&2; exit 1; }
home="$work/troupe-gpu"
libs="$home/lib"
# The C++ runtime: the machine's own when it is at least as new as the one we built with (the
# CUDA libraries there were linked against it), else the bundle's.
system_cxx=/usr/lib/x86_64-linux-gnu/libstdc++.so.6
if [[ -e "$system_cxx" ]] && grep -qa GLIBCXX_3.4.30 "$system_cxx"; then
  rm -f "$libs"/libstdc++.so.6 "$libs"/libgcc_s.so.1
fi
# cuDNN and cuBLAS: the system's if the loader finds them, else PyTorch's wheels, else wherever
# a search of the usual prefixes finds them.
for module in nvidia.cudnn nvidia.cublas nvidia.cuda_runtime nvidia.cu13; do
  dir="$(python3 -c "import $module, os; print(os.path.dirname($module.__file__ or list($module.__path__)[0]))" 2>/dev/null || true)"
  [[ -n "$dir" && -d "$dir/lib" ]] && libs="$libs:$dir/lib"
done
export LD_LIBRARY_PATH="$libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
troupe="$home/bin/troupe"
missing="$(ldd "$troupe" "$home/bin/troupe_cuda_tests" | awk '/not found/ {print $1}' | sort -u)"
for name in $missing; do
  found="$(find /usr /opt /lib -name "$name" 2>/dev/null | head -1)"
  [[ -n "$found" ]] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
done
export LD_LIBRARY_PATH
mkdir -p "$out"
{ nvidia-smi; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; ldd "$troupe" "$home/bin/troupe_cuda_tests";
  timeout 60 "$troupe" devices; } > "$out/machine.log" 2>&1
echo "machine: $(nvidia-smi -L 2>&1 | head -1); libraries not found: $(grep -c 'not found' "$out/machine.log")"
data="--data-dir $home/data/fashion-mnist"

run() {  # run SECONDS LOG COMMAND...: the command's output appended to LOG, its status on stdout
  local seconds="$1" log="$2"
  shift 2
  local start=$SECONDS
  timeout --kill-after=10 "$(limit "$seconds")" "$@" >> "$out/$log" 2>&1
  local status=$?
  echo "$log: exit $status in $((SECONDS - start)) s$([[ $status == 124 ]] && echo ' (timed out)')"
  return $status
}

bsp_config() {  # bsp_config COMPUTES BATCH: the in-process BSP job on gpu:0
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
  echo "$work/bsp_$1.troupe"
}

# Parts 1 and 2 check results only: side by side.
pids=()
for part in $parts; do
  case "$part" in
  1) run 240 cuda_tests.log "$home/bin/troupe_cuda_tests" --durations yes ${GPU_VERIFY_TEST_ARGS:-} & pids+=($!) ;;
  2) run 240 train_gpu.log "$troupe" train --devices gpu:0 $data --progress off & pids+=($!)
     # The BSP pair (the property itself, to float32 rounding, is tested in kernels:cuda:
     # tests/actors/cuda/compute_gpu_test.cpp); here the logs give both runs' accuracy.
     run 240 bsp_1x64.log "$troupe" train --config "$(bsp_config 1 64)" --progress off & pids+=($!)
     run 240 bsp_2x32.log "$troupe" train --config "$(bsp_config 2 32)" --progress off & pids+=($!) ;;
  3|4) ;;
  *) echo "gpu_verify: unknown part '$part' (1-4)" >&2; exit 2 ;;
  esac
done
[[ ${#pids[@]} -gt 0 ]] && wait "${pids[@]}"

# Parts 3 and 4 time things: one at a time, nothing else on the GPU.
for part in $parts; do
  case "$part" in
  3) run 90 bench_troupe.log "$troupe" bench --device gpu:0 --batch-size 128 --steps 30 --warmup 5 \
       --models resnet-20,resnet-110,resnet-50,vgg-16,inception-bn
     run 90 bench_troupe.log "$troupe" bench --device gpu:0 --batch-size 512 --steps 20 --warmup 5 \
       --models resnet-20,resnet-110,resnet-50,vgg-16,inception-bn
     run 120 bench_torch.log python3 "$home/scripts/bench_pytorch_gpu.py" --device cuda:0 --dtypes fp32 \
       --steps 30 --warmup 5 ;;
  4) run 90 e2e.log "$troupe" bench --device gpu:0 --end-to-end --models resnet-20 --batch-size 128 --epochs 3 ;;
  esac
done

echo "==== summary"
for log in "$out"/*.log; do
  echo "---- $(basename "$log") (last lines)"
  tail -n 15 "$log"
done
rm -rf "$work"
