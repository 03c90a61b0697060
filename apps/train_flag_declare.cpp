// `troupe train`'s flags declared: each with its help (the key table's, where it has a key)
// and the word its value shows in help.
#include "apps/train_raw_flags.hpp"

#include "apps/train_flags.hpp"

namespace troupe::train_flag_parts {

namespace {

// Words for the values in help (`--lr RATE`); flags not listed show their type (N, X, TEXT).
void name_placeholders(flag_set& f) {
  const std::pair<const char*, const char*> words[] = {{"config", "FILE"},
                                                       {"metrics", "FILE"},
                                                       {"timeline", "FILE"},
                                                       {"data-dir", "DIR"},
                                                       {"lr", "RATE"},
                                                       {"lr-factor", "FACTOR"},
                                                       {"lr-schedule", "POLICY"},
                                                       {"lr-step-epochs", "EPOCHS"},
                                                       {"warmup-epochs", "EPOCHS"},
                                                       {"network", "NAME"},
                                                       {"dataset", "NAME"},
                                                       {"image-shape", "C,H,W"},
                                                       {"init-from", "PREFIX-EPOCH"},
                                                       {"reset-layers", "NAMES"},
                                                       {"classes", "LIST"},
                                                       {"slice-bytes", "BYTES"},
                                                       {"group-bytes", "BYTES"},
                                                       {"devices", "LIST"},
                                                       {"cudnn-algorithms", "exact|fastest"},
                                                       {"progress", "MODE"},
                                                       {"on-worker-loss", "POLICY"},
                                                       {"random-mirror", "0|1"},
                                                       {"mom", "X"},
                                                       {"wd", "X"},
                                                       {"top-k", "K"}};
  for (const auto& [flag, word] : words)
    f.set_placeholder(flag, word);
}

} // namespace

void declare(flag_set& f, raw_flags& r) {
  f.add("config", r.config,
        "read the job from a .troupe config (docs/dsl.md); other flags given override it");
  f.add("network", r.network, "mlp | lenet | resnet | inception-bn | vgg");
  f.add("num-layers", r.num_layers, key_help("num-layers", "0 = the network's default"));
  f.add("dataset", r.dataset, "fashion-mnist | mnist | cifar10 | synthetic");
  f.add("data-dir", r.data_dir, key_help("data-dir"));
  f.add("val-batch-size", r.val_batch_size, "validation batch size");
  f.add("optimizer", r.optimizer,
        "sgd | adam | adamw | rmsprop | adagrad | lamb | lars (default: the config's, else sgd)");
  f.add(
    "lr", r.lr,
    key_help("lr",
             "-1: the optimizer's; sgd: 0.1 for mlp/resnet, 0.05 for "
             "lenet/vgg/inception-bn; adam, adamw, lamb: 0.001; rmsprop, adagrad: 0.01; lars: 1"));
  f.add("lr-schedule", r.lr_schedule, "multi-step | step | cosine | poly | one-cycle | constant");
  f.add("lr-step-epochs", r.lr_step_epochs,
        key_help("lr-step-epochs",
                 "written 5,7.5 or 50%,75%; \"\": 50% and 75% of --num-epochs, also over a "
                 "config's steps"));
  f.add("warmup-epochs", r.warmup_epochs,
        key_help("warmup-epochs", "-1: a tenth of --num-epochs, at most 1"));
  r.keys.declare(f); // every plain key's flag, in the key table's order
  f.add("threads", r.threads, key_help("threads"));
  f.add("workers", r.workers, key_help("workers"));
  r.topology.declare(f);
  f.add_switch("no-overlap", r.no_overlap,
               "send all pushes after backward instead of each as soon as backward produced it");
  f.add("compression", r.compression,
        "none | fp16 | bf16 | 2bit[:THRESHOLD] | 2bit:fit (error feedback): compress the gradients "
        "where they leave their machine, and the answers as deltas; push:C compresses the pushes "
        "only; replaces every route's compress");
  f.add_switch("no-priority", r.no_priority,
               "cluster channels write pushes and their answers in backward's order (last layer "
               "first) instead of the order the next forward needs them");
  f.add("on-worker-loss", r.on_worker_loss,
        key_help("on-worker-loss", "default: adopt in bsp, else stop"));
  f.add("random-crop-pad", r.random_crop_pad,
        "random crop after zero padding, 0 to 64 (-1: 4 for cifar10, else 0)");
  f.add("random-mirror", r.random_mirror, "random horizontal flip 0/1 (-1: 1 for cifar10, else 0)");
  r.record.declare(f);
  f.add("image-shape", r.image_shape, key_help("image-shape", "C,H,W"));
  f.add("num-classes", r.num_classes, key_help("num-classes"));
  f.add("num-examples", r.num_examples,
        key_help("num-examples", "synthetic; file data: the first N of the training split"));
  f.add("classes", r.classes, key_help("classes", "training and validation data"));
  f.add_switch("no-validation", r.no_validation, "skip the validation pass after each epoch");
  f.add("eval-every", r.eval_every, key_help("eval-every"));
  f.add("top-k", r.top_k,
        key_help("top-k", "troupe eval: 0 means 5 when there are more than 5 classes, else 1"));
  f.add("devices", r.devices, key_help("devices"));
  f.add("cudnn-algorithms", r.cudnn_algorithms,
        "GPU convolutions: exact (no FFT or non-fused Winograd: float32 results) | fastest "
        "(whatever cuDNN times fastest, ~1e-3 off; docs/gpu.md)");
  f.add("progress", r.progress, "progress bar: auto (when stdout is a terminal) | on | off");
  f.add(
    "timeline", r.timeline,
    "write the run's timeline to FILE at its end, a Chrome trace for Perfetto or "
    "chrome://tracing: each compute's forward, backward, pushes and waits, the shards' applies, "
    "the aggregators' barriers, checkpoint saves "
    "(docs/operations.md, \"Timeline\")");
  name_placeholders(f);
}

} // namespace troupe::train_flag_parts
