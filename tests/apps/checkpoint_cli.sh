#!/usr/bin/env bash
# End-to-end checkpoint checks of the troupe binary (tests/apps/CMakeLists.txt, cli:checkpoint_*).
# usage: checkpoint_cli.sh TROUPE SOURCE_DIR SCENARIO
#   resume        4 epochs with a checkpoint per epoch, then a run resumed from epoch 2: the
#                 final weights digest must be the uninterrupted run's. The job uses momentum
#                 SGD, a multi-step schedule with a step inside epoch 2 and reshuffled data, so
#                 a resume that lost the momentum buffers, the schedule position or the data
#                 order position (the epoch the shuffle streams are keyed by) ends elsewhere:
#                 zeroing the momentum in the restore, or starting the loaders at epoch 0,
#                 changes the digest (checked by hand; tests/actors/checkpoint_actor_test.cpp
#                 checks the momentum and batch-norm cases automatically).
#   resume-config the same from a config (2 workers, 2 shards, sliced keys), the flags
#                 overriding its model_prefix
#   refused       a corrupted, truncated, missing, or other model's checkpoint: exit 1 before
#                 any training, with the file's name and the fault
#   torch         scripts/load_checkpoint.py reads the last checkpoint with PyTorch and prints
#                 the weights digest troupe printed (77: no PyTorch, the test is skipped)
#   eval          troupe eval on the last checkpoint prints the training run's last validation
#                 accuracy and cross-entropy
#   reshard       2 workers and 2 shards over sliced keys, saved each epoch; resumed from epoch 2
#                 with 1 and with 3 shards (keys re-sharded): the uninterrupted run's digest
#   compressed    2 workers with --compression 2bit:fit, resumed from epoch 1: the run says that
#                 checkpoints do not keep the residuals (so it is not bit-identical), trains
#                 epochs 1 and 2 and reaches 0.5 validation accuracy; resumed from the last
#                 epoch it says nothing of residuals and ends with the saved weights
#   cluster       the epoch-2 checkpoint rewritten as a cluster run's files (3 shards on 2
#                 servers, 2 worker nodes) by SPLIT_TOOL: resumed in one process with 2 shards
#                 it ends with the uninterrupted run's digest; troupe eval prints the same
#                 figures as for the one-process file; a corrupt, truncated or missing part is
#                 refused before training, naming the part
#   cluster-torch load_checkpoint.py prints the same names, shapes and digest for the manifest
#                 (given as the file, and as --prefix/--epoch) as for the one-process file, and
#                 refuses a truncated part naming it
#   adam          Adam over 2 shards of sliced keys: 2 epochs straight against 1 epoch and a
#                 resume from it end with the same weights digest (the moments and every key's
#                 update count restored), the checkpoint holds Adam's state tensors, and a run
#                 with another optimizer is refused naming the file and both optimizers
# usage adds SPLIT_TOOL (tests/apps/checkpoint_split_tool.cpp) for the cluster scenarios.
set -u
troupe=$1; source_dir=$2; scenario=$3; split_tool=${4:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/troupe_checkpoint_XXXXXX")
trap 'rm -rf "$work"' EXIT
data=(--dataset synthetic --num-examples 1024 --batch-size 32 --lr 0.05 --mom 0.9 --lr-step-epochs 2.5
      --disp-batches 0 --progress off --threads 1)
model=(--network mlp --image-shape 1,12,12)
job=("${model[@]}" "${data[@]}")
# What troupe eval reads of them: the model and the validation data (it refuses the rest).
scored=("${model[@]}" --dataset synthetic --num-examples 1024 --threads 1)

fail() { printf 'FAIL: %s\n' "$*"; exit 1; }
digest_of() { grep '^Final weights:' "$1" | tail -1; }

# Runs troupe with the given arguments into $work/$name.log; must exit 0.
train() {
  local name=$1; shift
  "$troupe" "$@" > "$work/$name.log" 2>&1
  local status=$?
  [[ $status -eq 0 ]] || { cat "$work/$name.log"; fail "troupe $* exited $status"; }
}

# troupe train (the data flags, then the arguments) must exit 1 and print the file's name and
# the fault (grep -E) in one line.
refused() {
  local file=$1 what=$2; shift 2
  local out status
  out=$("$troupe" train "${data[@]}" --num-epochs 4 "$@" 2>&1); status=$?
  [[ $status -eq 1 ]] || fail "expected exit 1, got $status: $out"
  grep -Eq -- "$file.*$what" <<<"$out" || fail "no line naming $file and /$what/: $out"
  grep -q 'Epoch\[' <<<"$out" && fail "training started before the refusal: $out"
  return 0
}

# The python3 that has torch (Debian's python3-torch belongs to the system interpreter, which
# another python3 on the PATH, a pyenv shim, may hide); exits 77 (skipped) when none has.
torch_python() {
  for candidate in python3 /usr/bin/python3; do
    "$candidate" -c 'import torch' 2>/dev/null && { echo "$candidate"; return; }
  done
  echo "no python3 with torch: skipped" >&2
  exit 77
}

# The uninterrupted 4-epoch run of 2 workers and 2 shards over sliced keys, saving every epoch.
sharded=("${job[@]}" --workers 2 --slice-bytes 16384)
train_sharded_whole() { train whole train "${sharded[@]}" --num-epochs 4 --shards 2 --model-prefix "$work/m"; }

case $scenario in
adam)
  adam_job=("${model[@]}" --dataset synthetic --num-examples 1024 --batch-size 32 --disp-batches 0
            --progress off --threads 1 --optimizer adam --lr 0.002 --lr-step-epochs 1.5
            --workers 2 --shards 2 --slice-bytes 16384)
  train whole train "${adam_job[@]}" --num-epochs 2 --model-prefix "$work/a"
  train resumed train "${adam_job[@]}" --num-epochs 2 --model-prefix "$work/a" --load-epoch 1
  grep -q 'Resuming from .*a-0001.safetensors' "$work/resumed.log" || fail "no resume line: $(cat "$work/resumed.log")"
  [[ -n "$(digest_of "$work/whole.log")" ]] || fail "the straight run printed no final weights"
  [[ "$(digest_of "$work/whole.log")" == "$(digest_of "$work/resumed.log")" ]] \
    || fail "resumed: $(digest_of "$work/resumed.log"), not $(digest_of "$work/whole.log")"
  grep -aq 'exp_avg_sq/' "$work/a-0001.safetensors" || fail "the checkpoint holds no exp_avg_sq tensors"
  refused "a-0001.safetensors" "optimizer adam, this run's optimizer is sgd" "${model[@]}" \
    --model-prefix "$work/a" --load-epoch 1
  ;;
reshard)
  train_sharded_whole
  for shards in 1 3; do
    train "resumed$shards" train "${sharded[@]}" --num-epochs 4 --shards $shards --model-prefix "$work/m" --load-epoch 2
    grep -q "$shards parameter shard(s)" "$work/resumed$shards.log" || fail "not a run of $shards shards"
    [[ "$(digest_of "$work/whole.log")" == "$(digest_of "$work/resumed$shards.log")" ]] \
      || fail "resumed with $shards shards: $(digest_of "$work/resumed$shards.log"), not $(digest_of "$work/whole.log")"
  done
  ;;
compressed)
  # Residuals are not in checkpoints: the resumed run says so, trains on, and learns.
  squeezed=("${job[@]}" --workers 2 --compression 2bit:fit --num-epochs 3)
  train whole train "${squeezed[@]}" --model-prefix "$work/m"
  # The last epoch's checkpoint (read before the resumed run below saves over it) trains
  # nothing more: nothing is lost, so no such line.
  train last train "${squeezed[@]}" --model-prefix "$work/m" --load-epoch 3
  grep -q 'Resuming a compressed run' "$work/last.log" && fail "a run with nothing left to train warned of residuals"
  [[ "$(digest_of "$work/whole.log")" == "$(digest_of "$work/last.log")" ]] \
    || fail "the last epoch's checkpoint: $(digest_of "$work/last.log"), not $(digest_of "$work/whole.log")"
  train resumed train "${squeezed[@]}" --model-prefix "$work/m" --load-epoch 1
  grep -q 'Resuming a compressed run: checkpoints do not keep .* residuals' "$work/resumed.log" \
    || fail "the resumed compressed run does not say its residuals start from zero: $(cat "$work/resumed.log")"
  grep -q 'Epoch\[0\]' "$work/resumed.log" && fail "the resumed run trained epoch 0 again"
  [[ -n "$(digest_of "$work/resumed.log")" ]] || fail "the resumed run printed no final weights"
  accuracy=$(grep -o 'Epoch\[2\] Validation-accuracy=[0-9.]*' "$work/resumed.log" | cut -d= -f2)
  [[ -n "$accuracy" ]] || fail "no validation accuracy after epoch 2: $(cat "$work/resumed.log")"
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.5 else 1)" "$accuracy" \
    || fail "the resumed compressed run reached $accuracy after epoch 2 (10 classes; the floor is 0.5)"
  ;;
cluster)
  train_sharded_whole
  train eval_single eval "${scored[@]}" --model-prefix "$work/m" --load-epoch 2
  "$split_tool" "$work/m" 2 3 2 2 16384 > "$work/split.log" || fail "split: $(cat "$work/split.log")"
  [[ -f "$work/m-0002.manifest.json" && ! -f "$work/m-0002.safetensors" ]] || fail "no manifest instead of the file: $(ls "$work")"
  train resumed train "${sharded[@]}" --num-epochs 4 --shards 2 --model-prefix "$work/m" --load-epoch 2
  grep -q 'Resuming from .*m-0002.manifest.json' "$work/resumed.log" || fail "no resume line naming the manifest"
  [[ "$(digest_of "$work/whole.log")" == "$(digest_of "$work/resumed.log")" ]] \
    || fail "resumed from the cluster checkpoint: $(digest_of "$work/resumed.log"), not $(digest_of "$work/whole.log")"
  train eval_cluster eval "${scored[@]}" --model-prefix "$work/m" --load-epoch 2
  grep -q '^Evaluated .*m-0002.manifest.json' "$work/eval_cluster.log" || fail "eval did not read the manifest"
  diff <(grep '^Validation' "$work/eval_single.log") <(grep '^Validation' "$work/eval_cluster.log") \
    || fail "eval of the cluster checkpoint differs from the one-process file's"
  part="$work/m-0002.server_1.safetensors"
  cp "$part" "$work/good"
  python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=0x10; open(p,'wb').write(b)" "$part"
  refused "$part" "checksum sha256:.* differs from the manifest" "${model[@]}" --workers 2 --slice-bytes 16384 --model-prefix "$work/m" --load-epoch 2
  cp "$work/good" "$part"; truncate -s -100 "$part"
  refused "$part" "bytes where the manifest" "${model[@]}" --workers 2 --slice-bytes 16384 --model-prefix "$work/m" --load-epoch 2
  rm "$part"
  refused "$part" "cannot open" "${model[@]}" --workers 2 --slice-bytes 16384 --model-prefix "$work/m" --load-epoch 2
  ;;
cluster-torch)
  python=$(torch_python) || exit 77
  train whole train "${sharded[@]}" --num-epochs 2 --lr-step-epochs 1.5 --shards 2 --model-prefix "$work/m"
  "$python" "$source_dir/scripts/load_checkpoint.py" "$work/m-0002.safetensors" --all > "$work/single.txt" \
    || fail "load_checkpoint.py on the one-process file"
  "$split_tool" "$work/m" 2 3 2 2 16384 > "$work/split.log" || fail "split: $(cat "$work/split.log")"
  "$python" "$source_dir/scripts/load_checkpoint.py" "$work/m-0002.manifest.json" --all > "$work/manifest.txt" \
    || fail "load_checkpoint.py on the manifest"
  "$python" "$source_dir/scripts/load_checkpoint.py" --prefix "$work/m" --epoch 2 --all > "$work/prefix.txt" \
    || fail "load_checkpoint.py --prefix --epoch"
  diff "$work/single.txt" "$work/manifest.txt" || fail "the manifest prints otherwise than the one-process file"
  diff "$work/single.txt" "$work/prefix.txt" || fail "--prefix/--epoch prints otherwise than the file"
  [[ "$(tail -1 "$work/manifest.txt")" == "$(digest_of "$work/whole.log")" ]] \
    || fail "the manifest's digest '$(tail -1 "$work/manifest.txt")' is not troupe's '$(digest_of "$work/whole.log")'"
  part="$work/m-0002.server_0.safetensors"
  truncate -s -8 "$part"
  out=$("$python" "$source_dir/scripts/load_checkpoint.py" "$work/m-0002.manifest.json" 2>&1)
  [[ $? -eq 1 ]] && grep -q "$part: has .* bytes where the manifest" <<<"$out" \
    || fail "load_checkpoint.py took a truncated part: $out"
  ;;
resume)
  train whole train "${job[@]}" --num-epochs 4 --model-prefix "$work/m"
  for e in 1 2 3 4; do [[ -f "$work/m-000$e.safetensors" ]] || fail "no checkpoint after epoch $e"; done
  ls "$work" | grep -q '\.tmp\.' && fail "a temporary file was left behind"
  train resumed train "${job[@]}" --num-epochs 4 --model-prefix "$work/m" --load-epoch 2
  grep -q 'Resuming from .*m-0002.safetensors' "$work/resumed.log" || fail "no resume line"
  grep -q 'Epoch\[1\]' "$work/resumed.log" && fail "the resumed run trained epoch 1 again"
  grep -q 'Resuming a compressed run' "$work/resumed.log" && fail "an uncompressed run warned of residuals"
  [[ "$(digest_of "$work/whole.log")" == "$(digest_of "$work/resumed.log")" ]] \
    || fail "resumed digest $(digest_of "$work/resumed.log") differs from $(digest_of "$work/whole.log")"
  train period train "${job[@]}" --num-epochs 4 --model-prefix "$work/p" --save-period 3
  [[ -f "$work/p-0003.safetensors" && -f "$work/p-0004.safetensors" && ! -f "$work/p-0002.safetensors" ]] \
    || fail "--save-period 3 of 4 epochs should save after epochs 3 and 4: $(ls "$work")"
  ;;
resume-config)
  config="$source_dir/tests/apps/configs/checkpoint_bsp.troupe"
  common=(--config "$config" --progress off --threads 1)
  train whole train "${common[@]}" --model-prefix "$work/c"
  [[ -f "$work/c-0004.safetensors" ]] || fail "the flag did not override the config's model_prefix"
  train resumed train "${common[@]}" --model-prefix "$work/c" --load-epoch 2
  [[ "$(digest_of "$work/whole.log")" == "$(digest_of "$work/resumed.log")" ]] \
    || fail "resumed digest $(digest_of "$work/resumed.log") differs from $(digest_of "$work/whole.log")"
  ;;
refused)
  train whole train "${job[@]}" --num-epochs 2 --lr-step-epochs 1.5 --model-prefix "$work/m"
  ckpt="$work/m-0001.safetensors"
  refused "$work/m-0003.safetensors" "cannot open" "${model[@]}" --model-prefix "$work/m" --load-epoch 3
  refused "$ckpt" "another model or shape" --network mlp --image-shape 1,10,10 --model-prefix "$work/m" --load-epoch 1
  cp "$ckpt" "$work/good"
  python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=0x10; open(p,'wb').write(b)" "$ckpt"
  refused "$ckpt" "checksum mismatch.*corrupted" "${model[@]}" --model-prefix "$work/m" --load-epoch 1
  cp "$work/good" "$ckpt"
  truncate -s -100 "$ckpt"
  refused "$ckpt" "outside the .*-byte buffer" "${model[@]}" --model-prefix "$work/m" --load-epoch 1
  truncate -s 5 "$ckpt"
  refused "$ckpt" "too short" "${model[@]}" --model-prefix "$work/m" --load-epoch 1
  ;;
torch)
  train whole train "${job[@]}" --num-epochs 2 --lr-step-epochs 1.5 --model-prefix "$work/m"
  # Debian's python3-torch belongs to the system interpreter, which another python3 on the
  # PATH (a pyenv shim) may hide.
  python=
  for candidate in python3 /usr/bin/python3; do
    "$candidate" -c 'import torch' 2>/dev/null && { python=$candidate; break; }
  done
  [[ -n $python ]] || { echo "no python3 with torch: skipped"; exit 77; }
  "$python" "$source_dir/scripts/load_checkpoint.py" "$work/m-0002.safetensors" > "$work/torch.log"
  status=$?
  [[ $status -eq 77 ]] && exit 77
  [[ $status -eq 0 ]] || fail "load_checkpoint.py exited $status"
  grep -q $'^fc1.weight\t\[' "$work/torch.log" || fail "no fc1.weight line: $(cat "$work/torch.log")"
  [[ "$(tail -1 "$work/torch.log")" == "$(digest_of "$work/whole.log")" ]] \
    || fail "PyTorch's digest '$(tail -1 "$work/torch.log")' is not troupe's '$(digest_of "$work/whole.log")'"
  ;;
eval)
  # A small learning rate keeps the accuracy well below 1, so equal figures mean something.
  slow=("${model[@]}" --dataset synthetic --num-examples 1024 --batch-size 32 --lr 0.003 --warmup-epochs 0
        --disp-batches 0 --progress off --threads 1 --num-epochs 3)
  train whole train "${slow[@]}" --model-prefix "$work/m"
  grep -q '^Epoch\[2\] Validation-accuracy=0\.[0-8]' "$work/whole.log" || fail "accuracy too high to tell: $(cat "$work/whole.log")"
  train eval eval "${scored[@]}" --model-prefix "$work/m" --load-epoch 3 --per-class
  for metric in accuracy cross-entropy; do
    # cross-entropy comes after a colon (MXNet parse_log averages `=` values as accuracy), in
    # training's log and eval's alike
    trained=$(grep -E "^Epoch\[2\] Validation-$metric[=:]" "$work/whole.log" | sed -E 's/.*[=:] *//')
    evaluated=$(grep -E "^Validation-$metric[=:]" "$work/eval.log" | sed -E 's/.*[=:] *//')
    [[ -n "$trained" && "$trained" == "$evaluated" ]] || fail "eval's $metric '$evaluated' is not training's '$trained'"
  done
  grep -q '^Validation-top_k_accuracy_5=' "$work/eval.log" || fail "no top-5 line"
  [[ $(grep -c '^Class\[[0-9]*\] accuracy=' "$work/eval.log") -eq 10 ]] || fail "not 10 per-class lines"
  ;;
*)
  fail "unknown scenario $scenario"
  ;;
esac
echo "ok: $scenario"
