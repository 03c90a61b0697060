// `troupe eval`: scores a saved checkpoint on a dataset without training, in the manner of
// MXNet's score.py: the model is built from the same flags (or config) as `troupe train`, the
// weights and worker 0's buffers come from PREFIX-EEEE.safetensors or a cluster run's
// PREFIX-EEEE.manifest.json and its parts (read_any_checkpoint), and the validation data
// (the dataset's test split unless the config names another) is cut into the same batches
// validation uses, so the accuracy equals the training run's validation accuracy after that
// epoch.
#include <cstdio>
#include <iostream>
#include <set>

#include "apps/classification_scores.hpp"
#include "apps/commands.hpp"
#include "apps/train_flags.hpp"
#include <troupe/actors/checkpoint_actor.hpp>
#include <troupe/actors/node_part.hpp>
#include <troupe/graph/model_state.hpp>
#include <troupe/graph/zoo.hpp>
#include <troupe/io/batch_source.hpp>
#include <troupe/io/checkpoint_parts.hpp>
#include <troupe/io/class_names.hpp>
#include <troupe/kernels/threading.hpp>

namespace troupe {

namespace {

const char* summary =
  "Evaluates a checkpoint (--model-prefix PREFIX --load-epoch E: PREFIX-EEEE.safetensors, or a "
  "cluster run's PREFIX-EEEE.manifest.json and its parts) on the "
  "validation data the training flags describe: accuracy, top-k accuracy, cross-entropy, and with "
  "--per-class the accuracy of each class. It reads the flags that shape the model, the "
  "validation data and the checkpoint; the other training flags are refused.";

// What eval reads: the model, the validation data and how it is batched, the checkpoint, the
// threads and the scores; a training flag (--lr, --shard-backups) would be ignored, so it is
// refused.
const std::set<std::string> eval_flags{
  "per-class",    "config",       "network",        "num-layers", "dataset",          "data-dir",
  "data-val",     "data-val-idx", "rgb-mean",       "rgb-std",    "skip-bad-records", "image-shape",
  "num-classes",  "num-examples", "val-batch-size", "seed",       "threads",          "top-k",
  "model-prefix", "load-epoch"};

std::string fixed(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", v);
  return text;
}

// The model the flags describe (the network the checkpoint records, unless --network or a
// config names one), with the checkpoint's weights and worker 0's buffers.
std::unique_ptr<model> load_model(const train_command_line& cli, const dataset& data,
                                  std::string& path) {
  const auto& ck = cli.output.checkpoint;
  if (ck.prefix.empty() || ck.load_epoch < 0)
    throw usage_error("--model-prefix and --load-epoch name the checkpoint to evaluate");
  path = existing_checkpoint_path(ck.prefix, ck.load_epoch);
  const auto c = read_any_checkpoint(ck.prefix, ck.load_epoch);
  auto spec = cli.job.model;
  if (!c.network.empty() && !cli.given.count("network") && !cli.given.count("config"))
    spec.network = c.network;
  spec.sample_shape = data.sample_shape();
  spec.classes = data.classes();
  auto m = build_model(spec);
  check_checkpoint_model(c, path, *m);
  auto& params = m->parameters();
  for (std::size_t slot = 0; slot < params.size(); ++slot)
    params[slot]->value = c.parameters[slot].value;
  restore_replica_state(*m, c.replicas.at(0));
  return m;
}

// `names`: the dataset's class names (class_names.hpp); a name that is the class's number is
// not repeated after it.
void print_scores(const classification_scores& s, bool per_class,
                  const std::vector<std::string>& names) {
  std::cout << "Validation-accuracy=" << fixed(s.accuracy()) << '\n'
            << "Validation-top_k_accuracy_" << s.top_k() << '=' << fixed(s.top_k_accuracy()) << '\n'
            << "Validation-cross-entropy: " << fixed(s.mean_loss()) << '\n';
  if (!per_class)
    return;
  for (int c = 0; c < s.classes(); ++c) {
    const auto& name = names.at(static_cast<std::size_t>(c));
    std::cout << "Class[" << c << "] " << (name == std::to_string(c) ? "" : name + ": ")
              << "accuracy=" << fixed(s.class_accuracy(c)) << " (" << s.class_examples(c)
              << " examples)\n";
  }
}

} // namespace

int eval_command(const std::vector<std::string>& args) {
  bool per_class = false;
  auto cli = parse_train_flags(
    args, "eval", summary,
    [&](flag_set& f) { f.add_switch("per-class", per_class, "print the accuracy of every class"); },
    {}, eval_flags);
  if (cli.help) {
    std::cout << cli.help_text;
    return 0;
  }
  set_compute_threads(cli.threads);
  const auto data = open_dataset(cli.job.validation_data);
  // --top-k is the training flag (checked against the classes there); its "off" means
  // MXNet score.py's habit here.
  int top_k = cli.job.top_k;
  if (top_k == 0)
    top_k = data->classes() > 5 ? 5 : 1;
  std::string path;
  auto m = load_model(cli, *data, path);
  batch_source source(data, cli.job.validation_batches);
  classification_scores scores(data->classes(), top_k);
  for (std::int64_t i = 0; i < source.batches_per_epoch(); ++i) {
    const auto b = source.make(cli.output.checkpoint.load_epoch, i);
    scores.add(m->forward(b.images, false), b.labels);
  }
  std::cout << "Evaluated " << path << " (" << m->name() << ") on " << data->description() << ": "
            << scores.examples() << " examples\n";
  print_scores(scores, per_class,
               per_class ? class_names(cli.job.validation_data, data->classes())
                         : std::vector<std::string>{});
  return 0;
}

} // namespace troupe
