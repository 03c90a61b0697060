#!/usr/bin/env bash
# End-to-end fine-tuning checks of the troupe binary (tests/apps/CMakeLists.txt, cli:init_from_*).
# usage: init_from_cli.sh TROUPE SCENARIO [SPLIT_TOOL]
#   shapes   a checkpoint of 2 computes and 2 shards seeds a run of 1 compute and 1 shard, as the
#            one-process file and rewritten as a cluster run's parts (2 servers, 2 worker nodes,
#            by SPLIT_TOOL, tests/apps/checkpoint_split_tool.cpp) named by PREFIX-EPOCH and by
#            its manifest; the run trains from epoch 0 and saves its own checkpoint after it
#   reset    a wider classifier (--num-classes) is refused naming the tensor, both shapes and
#            --reset-layers; with --reset-layers it trains, saying which parameters are fresh;
#            a reset name matching no layer is refused listing the layers
#   refused  a file that is not a checkpoint, a missing checkpoint, a name that is neither
#            PREFIX-EPOCH nor a file: exit 1 before training, naming it; --reset-layers without
#            --init-from and --init-from beside --load-epoch: exit 2
#   subset   --classes and --num-examples on synthetic data and, where it is installed, on
#            Fashion-MNIST: the log's example counts, and a class outside the data refused
set -u
troupe=$1; scenario=$2; split_tool=${3:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/troupe_init_from_XXXXXX")
trap 'rm -rf "$work"' EXIT
data=(--dataset synthetic --num-examples 600 --batch-size 32 --disp-batches 0 --progress off
      --threads 1 --network mlp --image-shape 1,8,8)

fail() { printf 'FAIL: %s\n' "$*"; exit 1; }

# troupe train with the data flags and the arguments, into $work/$name.log; must exit 0.
train() {
  local name=$1; shift
  "$troupe" train "${data[@]}" "$@" > "$work/$name.log" 2>&1
  local status=$?
  [[ $status -eq 0 ]] || { cat "$work/$name.log"; fail "troupe train $* exited $status"; }
}

# troupe train must exit STATUS with a line matching WHAT (grep -E), before any training.
refused() {
  local status=$1 what=$2; shift 2
  local out got
  out=$("$troupe" train "${data[@]}" --num-epochs 1 "$@" 2>&1); got=$?
  [[ $got -eq $status ]] || fail "expected exit $status, got $got: $out"
  grep -Eq -- "$what" <<<"$out" || fail "no line /$what/: $out"
  grep -q 'Epoch\[' <<<"$out" && fail "training started before the refusal: $out"
  return 0
}

saved_two_computes() {
  train two --workers 2 --shards 2 --slice-bytes 16384 --num-epochs 2 --model-prefix "$work/two/m"
}

case $scenario in
shapes)
  saved_two_computes
  train one --num-epochs 1 --init-from "$work/two/m-2" --model-prefix "$work/one/m"
  grep -q "Initializing from $work/two/m-0002.safetensors (mlp after epoch 2, 2 compute(s)): 6 of 6 parameters" \
    "$work/one.log" || fail "no initializing line: $(cat "$work/one.log")"
  grep -q '^Epoch\[0\] Validation-accuracy' "$work/one.log" || fail "epoch 0 not trained"
  [[ -f $work/one/m-0001.safetensors ]] || fail "the fine-tuned run saved no checkpoint"
  "$split_tool" "$work/two/m" 2 2 2 2 16384 > "$work/split.log" || fail "split: $(cat "$work/split.log")"
  [[ -f $work/two/m-0002.manifest.json ]] || fail "no manifest written"
  for spec in "$work/two/m-2" "$work/two/m-0002.manifest.json"; do
    train parts --num-epochs 1 --init-from "$spec"
    grep -q "Initializing from $work/two/m-0002.manifest.json (mlp after epoch 2, 2 compute(s))" \
      "$work/parts.log" || fail "no initializing line for $spec: $(cat "$work/parts.log")"
    # The same weights as from the one-process file, so the same run.
    [[ $(grep '^Final weights' "$work/parts.log") == $(grep '^Final weights' "$work/one.log") ]] \
      || fail "the parts gave other weights than the one-process file"
  done
  ;;
reset)
  saved_two_computes
  refused 1 "m-0002.safetensors: holds fc3.weight \[10, 64\] where the model \(mlp\) has fc3.weight \[12, 64\]: pass --reset-layers fc3" \
    --num-classes 12 --init-from "$work/two/m-2"
  train wide --num-epochs 1 --num-classes 12 --init-from "$work/two/m-2" --reset-layers fc3
  grep -q "4 of 6 parameters from it, training from epoch 0; from the initializer: fc3.weight, fc3.bias" \
    "$work/wide.log" || fail "no fresh parameters named: $(cat "$work/wide.log")"
  refused 1 "reset_layers: head matches no layer of mlp \(its layers: fc1, fc2, fc3\)" \
    --init-from "$work/two/m-2" --reset-layers fc3,head
  ;;
refused)
  printf 'not a checkpoint' > "$work/junk.safetensors"
  refused 1 "$work/junk.safetensors" --init-from "$work/junk.safetensors"
  refused 1 "$work/none-0004.safetensors" --init-from "$work/none-4"
  refused 1 "init_from \"$work/none\": name a checkpoint as PREFIX-EPOCH" --init-from "$work/none"
  refused 2 "reset_layers needs init_from" --reset-layers fc3
  refused 2 "init_from starts a new run from a checkpoint's weights, load_epoch resumes one" \
    --init-from "$work/m-1" --load-epoch 1 --model-prefix "$work/m"
  ;;
subset)
  train filtered --num-epochs 1 --classes 0-4
  grep -Eq "\(classes 0-4\): [0-9]+ examples" "$work/filtered.log" || fail "no subset: $(cat "$work/filtered.log")"
  refused 1 "class 10 is outside \[0, 10\)" --classes 8-10
  refused 2 "--classes: .*runs backwards" --classes 4-2
  fashion=/usr/share/datasets/fashion-mnist
  [[ -f $fashion/train-labels-idx1-ubyte.gz || -f $fashion/train-labels-idx1-ubyte ]] || exit 77
  "$troupe" train --network mlp --num-epochs 1 --threads 1 --progress off --disp-batches 0 \
    --classes 0-4 --num-examples 1000 > "$work/fashion.log" 2>&1 || fail "fashion subset: $(cat "$work/fashion.log")"
  grep -q "(classes 0-4, first 1000): 1000 examples" "$work/fashion.log" || fail "$(cat "$work/fashion.log")"
  grep -q "(classes 0-4) (5000 examples)" "$work/fashion.log" || fail "validation not filtered"
  ;;
*) fail "unknown scenario $scenario" ;;
esac
echo "init_from_cli $scenario: ok"
