// The keys of the `model`, `optimizer`, `schedule` and `train { }` sections (key_table.hpp):
// the network, how it learns, and what one run does.
#include "graph/config/key_builder.hpp"
#include "graph/config/value_reader.hpp"

namespace troupe::key_entries {

namespace {

template <auto Field> constexpr auto model = &job_field<&job_config::model, Field>;
template <auto Field> constexpr auto optimizer = &job_field<&job_config::optimizer, Field>;
template <auto Field> constexpr auto schedule = &job_field<&job_config::schedule, Field>;
template <auto Field> constexpr auto run = &job_field<&job_config::run, Field>;

// `steps = [5, 7.5]` (epochs) or `[50%, 75%]` (shares of the run, which follow --num-epochs).
// Elements of one kind must increase here; a mixed list is checked once the epochs are known.
void read_steps(const value_reader& r, const syntax_value& v, key_target& t) {
  if (v.type != syntax_value::kind::list)
    r.fail(v.span,
           "steps must be a list such as [50%, 75%] (shares of the run) or [5, 7.5] (epochs)");
  std::vector<schedule_step> steps;
  for (const auto& item : v.items) {
    if (item.type != syntax_value::kind::number)
      r.fail(item.span, "a step is an epoch (5, 7.5) or a share of the run (50%)");
    if (item.percent && !(item.number > 0 && item.number < 100))
      r.fail(item.span, "a step written as a share of the run must be above 0% and below 100%, got "
                          + shortest_number(item.number) + "%");
    if (!item.percent && item.number < 0)
      r.fail(item.span, "steps element must be at least 0, got " + shortest_number(item.number));
    schedule_step step{item.percent ? item.number / 100 : item.number, item.percent, item.span};
    for (auto it = steps.rbegin(); it != steps.rend(); ++it)
      if (it->share == step.share) {
        if (step.value <= it->value)
          r.fail(item.span, "steps must increase");
        break;
      }
    steps.push_back(step);
  }
  r.set(t.job.schedule.written_steps, std::move(steps), v);
}

void read_devices(const value_reader& r, const syntax_value& v, key_target& t) {
  if (v.type != syntax_value::kind::list || v.items.empty())
    r.fail(v.span, "devices must be a list such as [\"gpu:0\", \"gpu:1\"] (or [\"cpu\"])");
  std::vector<compute_device> devices;
  for (const auto& item : v.items) {
    if (item.type != syntax_value::kind::string && item.type != syntax_value::kind::name)
      r.fail(item.span, "a device is a string, \"cpu\" or \"gpu:N\"");
    try {
      devices.push_back(parse_compute_device(item.text));
    } catch (const std::invalid_argument& e) {
      r.fail(item.span, e.what());
    }
  }
  r.set(t.job.run.devices, std::move(devices), v);
}

} // namespace

std::vector<config_key> model_keys() {
  using k = key_type;
  return {
    entry("model", "layers", k::integer, model<&model_config::layers>)
      .within(whole(1, 1000))
      .flag_is("num-layers")
      .default_is("0 = the network's default depth (resnet 20 for 32x32, vgg 16)")
      .help_is("depth for resnet (20/32/44/56/110, 18/50) and vgg"),
    entry("model", "classes", k::integer, model<&model_config::classes>)
      .within(whole(2, 100000))
      .default_is("the data's classes")
      .help_is("must equal the data's classes"),
  };
}

std::vector<config_key> optimizer_keys() {
  using k = key_type;
  return {
    entry("optimizer", "lr", k::real, optimizer<&optimizer_config::lr>)
      .within(real(0, 100, true))
      .flag_is("lr")
      .default_is("sgd: 0.1 for mlp/resnet, 0.05 for lenet/vgg/inception_bn; adam, adamw, "
                  "lamb: 0.001; rmsprop, adagrad: 0.01; lars: 1")
      .help_is("initial learning rate", "also the optimizer's first argument without its name"),
    entry("optimizer", "momentum", k::real, optimizer<&optimizer_config::momentum>)
      .within(real(0, 1, false, true))
      .only_in("sgd rmsprop lars")
      .flag_is("mom")
      .default_is("sgd, lars: 0.9; rmsprop: 0")
      .help_is("momentum (SGD's and LARS's velocity; RMSProp's buffer of scaled gradients)"),
    entry("optimizer", "wd", k::real, optimizer<&optimizer_config::wd>)
      .within(real(0, 1))
      .flag_is("wd")
      .default_is("sgd, lars: 1e-4; adamw, lamb: 0.01; adam, rmsprop, adagrad: 0")
      .help_is("weight decay on weights; biases and batch-norm scale/shift are exempt",
               "L2 in the gradient for sgd, adam, rmsprop, adagrad and lars; decoupled (a shrink "
               "of the weights) for adamw and lamb"),
    entry("optimizer", "nesterov", k::boolean, optimizer<&optimizer_config::nesterov>)
      .only_in("sgd")
      .flag_is("nesterov")
      .help_is("use Nesterov momentum"),
    entry("optimizer", "beta1", k::real, optimizer<&optimizer_config::beta1>)
      .within(real(0, 1, false, true))
      .only_in("adam adamw lamb")
      .flag_is("beta1")
      .help_is("decay of the gradient's running mean (first moment)"),
    entry("optimizer", "beta2", k::real, optimizer<&optimizer_config::beta2>)
      .within(real(0, 1, false, true))
      .only_in("adam adamw lamb")
      .flag_is("beta2")
      .help_is("decay of the squared gradient's running mean (second moment)"),
    entry("optimizer", "eps", k::real, optimizer<&optimizer_config::eps>)
      .within(real(0, 1, true))
      .only_in("adam adamw rmsprop adagrad lamb lars")
      .flag_is("epsilon")
      .default_is("1e-8; adagrad: 1e-10; lamb: 1e-6")
      .help_is("added to the denominator, for numerical stability"),
    entry("optimizer", "alpha", k::real, optimizer<&optimizer_config::alpha>)
      .within(real(0, 1, false, true))
      .only_in("rmsprop")
      .flag_is("alpha")
      .help_is("decay of RMSProp's square average"),
    entry("optimizer", "trust", k::real, optimizer<&optimizer_config::trust>)
      .within(real(0, 1, true))
      .only_in("lars")
      .flag_is("lars-trust")
      .help_is("LARS's trust coefficient (eta): a key's rate is lr * trust * |w| / |g|"),
  };
}

std::vector<config_key> schedule_keys() {
  using k = key_type;
  return {
    entry("schedule", "warmup", k::real, schedule<&schedule_config::warmup>)
      .within(real(0, 1e6))
      .flag_is("warmup-epochs")
      .only_in("multi_step step cosine poly constant")
      .default_is("a tenth of the epochs, at most 1 and at most half the epochs before the "
                  "first decay")
      .help_is("epochs of linear lr warm-up from 0",
               "must end before the first decay (cosine, poly: before the run's end); a flag that "
               "shortens the run shortens it in proportion, saying so"),
    entry("schedule", "steps", k::list)
      .only_in("multi_step")
      .read_by(read_steps)
      .flag_is("lr-step-epochs")
      .default_is("[50%, 75%]")
      .help_is("epochs where the lr is multiplied by factor: epochs (5, 7.5) or shares of the run "
               "(50%, 75%)",
               "increasing, inside the run"),
    entry("schedule", "factor", k::real, schedule<&schedule_config::factor>)
      .within(real(0, 1, true))
      .only_in("multi_step step")
      .flag_is("lr-factor")
      .help_is("lr multiplier at each decay"),
    entry("schedule", "period", k::real, schedule<&schedule_config::period>)
      .within(real(0, 1e6, true))
      .only_in("step")
      .help_is("epochs between two decays"),
    entry("schedule", "final_lr", k::real, schedule<&schedule_config::final_lr>)
      .within(real(0, 100))
      .only_in("cosine poly")
      .help_is("the lr the schedule decays to"),
    entry("schedule", "power", k::real, schedule<&schedule_config::power>)
      .within(real(0, 100, true))
      .only_in("poly")
      .help_is("lr = final_lr + (lr - final_lr) * (1 - t / T)^power"),
    entry("schedule", "cycle", k::real, schedule<&schedule_config::cycle>)
      .within(real(0, 1e6))
      .only_in("cosine")
      .default_is("0: one cosine over the run")
      .help_is("epochs of the first cosine cycle; each restarts at lr (SGDR)"),
    entry("schedule", "cycle_mult", k::real, schedule<&schedule_config::cycle_mult>)
      .within(real(1, 1000))
      .only_in("cosine")
      .help_is("each cycle this many times as long as the one before"),
    entry("schedule", "pct_start", k::real, schedule<&schedule_config::pct_start>)
      .within(real(0, 1, true, true))
      .only_in("one_cycle")
      .help_is("share of the run rising from lr / div_factor to lr"),
    entry("schedule", "div_factor", k::real, schedule<&schedule_config::div_factor>)
      .within(real(1, 1e9))
      .only_in("one_cycle")
      .help_is("the rise starts at lr / div_factor"),
    entry("schedule", "final_div_factor", k::real, schedule<&schedule_config::final_div_factor>)
      .within(real(1, 1e12))
      .only_in("one_cycle")
      .help_is("the run ends at lr / (div_factor * final_div_factor)"),
  };
}

std::vector<config_key> train_keys() {
  using k = key_type;
  return {
    entry("train", "epochs", k::integer, run<&run_config::epochs>)
      .within(whole(1, 1e9))
      .flag_is("num-epochs")
      .help_is("epochs to train"),
    entry("train", "eval_every", k::integer, run<&run_config::eval_every>)
      .within(whole(0, 1e9, "0: no validation"))
      .flag_is("eval-every")
      .help_is("validate after every Nth epoch and after the last (0: no validation)",
               "epochs without validation get their metrics line without `val_*` fields"),
    entry("train", "seed", k::integer, run<&run_config::seed>)
      .within(whole(0, 9007199254740992.0)) // 2^53: every seed a double holds
      .flag_is("seed")
      .help_is("seed for initialization, shuffling, augmentation and synthetic data"),
    entry("train", "threads", k::integer, run<&run_config::threads>)
      .within(whole(1, max_compute_threads(), "4 per hardware thread, at least 64"))
      .flag_is("threads")
      .range_words("between 1 and 4 per hardware thread (at least 64)")
      .default_is("`OMP_NUM_THREADS`, else the hardware (`troupe train`)")
      .help_is("compute threads, shared by oneDNN/OpenMP and oneTBB; without it a config's "
               "train.threads, else OMP_NUM_THREADS, else the hardware's threads",
               "`troupe check` prints the language default, 2"),
    entry("train", "prefetch", k::integer, run<&run_config::prefetch>)
      .within(whole(1, 1024))
      .flag_is("prefetch")
      .help_is("batches each loader builds ahead"),
    entry("train", "display", k::integer, run<&run_config::display>)
      .within(whole(0, 1e9, "0: never"))
      .flag_is("disp-batches")
      .help_is("print speed and accuracy every N batches (0: never)"),
    entry("train", "metrics", k::text, run<&run_config::metrics>)
      .flag_is("metrics")
      .help_is("write one JSON object per epoch to this file (empty: none)"),
    entry("train", "top_k", k::integer, run<&run_config::top_k>)
      .within(whole(0, 100000, "0: off"))
      .flag_is("top-k")
      .help_is("also report top-K accuracy, training and validation, 1 to the classes (0: off)",
               "logged as `Epoch[e] Train-top_k_accuracy_K: V`, appended to the batch lines as "
               "`top_k_accuracy_K=V`, written to the metrics file as `top_k`, "
               "`train_top_k_accuracy`, `val_top_k_accuracy`"),
    entry("train", "metrics_every", k::integer, run<&run_config::metrics_every>)
      .within(whole(0, 1e9, "0: epochs only"))
      .flag_is("metrics-every")
      .help_is("also write a step record every N steps to the metrics file (0: epochs only)",
               "step, epoch_progress, wall-clock time, loss, accuracy, learning_rate, "
               "samples_per_s over the steps since the last one, and each rank's (in a cluster "
               "also each node's) mean step time and wait"),
    entry("train", "stall_epochs", k::integer, run<&run_config::stall_epochs>)
      .within(whole(1, 1000))
      .flag_is("stall-epochs")
      .help_is("warn when the training loss rose in each of this many epochs",
               "also warned: accuracy and loss near chance after an epoch, a loss above 1.5 ln K, "
               "compressed pushes that send under 1% of their values (docs/operations.md, \"A "
               "run that is not learning\")"),
    entry("train", "fail_on_stall", k::boolean, run<&run_config::fail_on_stall>)
      .flag_is("fail-on-stall")
      .help_is("stop the run with exit status 1 at the first such warning"),
    entry("train", "status_listen", k::text, run<&run_config::status_listen>)
      .flag_is("status-listen")
      .help_is("serve the run's status over HTTP at PORT (on 127.0.0.1) or HOST:PORT (empty: "
               "off)",
               "/ a live page, /status JSON, /metrics for Prometheus; on the scheduler of a "
               "cluster (docs/operations.md, \"The status server\")"),
    entry("train", "devices", k::list)
      .read_by(read_devices)
      .flag_is("devices")
      .default_is("`[]` (the CPU)")
      .help_is("where the compute actors run: cpu, or gpu:0,gpu:1,... (compute i on device i mod "
               "count)",
               "a GPU this machine lacks, or a build without CUDA, is refused before anything "
               "starts, naming the device (docs/gpu.md)"),
    entry("train", "model_prefix", k::text, run<&run_config::model_prefix>)
      .flag_is("model-prefix")
      .help_is("save checkpoints as PREFIX-EEEE.safetensors (docs/checkpoints.md)",
               "EEEE: epochs completed; empty: none"),
    entry("train", "save_period", k::integer, run<&run_config::save_period>)
      .within(whole(1, 1e9))
      .flag_is("save-period")
      .help_is("save a checkpoint every N epochs and after the last"),
    entry("train", "load_epoch", k::integer, run<&run_config::load_epoch>)
      .within(whole(0, 1e9))
      .flag_is("load-epoch")
      .default_is("none")
      .help_is(
        "resume from the model_prefix checkpoint of this epoch",
        "its weights, optimizer state, counters and backup state, training epochs load_epoch .. "
        "epochs - 1"),
    entry("train", "init_from", k::text, run<&run_config::init_from>)
      .flag_is("init-from")
      .help_is(
        "start from the weights of the checkpoint PREFIX-EPOCH (or its .safetensors or "
        ".manifest.json), at epoch 0 with a fresh optimizer",
        "a checkpoint of any run shape; not its optimizer state, counters, epoch or buffers; "
        "empty: none (docs/checkpoints.md, \"Fine-tuning\")"),
    entry("train", "reset_layers", k::text, run<&run_config::reset_layers>)
      .flag_is("reset-layers")
      .help_is("with init_from: parameters whose name starts with one of these comma-separated "
               "prefixes (fc2, stage3) keep the initializer's weights",
               "each prefix must match a parameter; a refusal lists the model's layers"),
  };
}

} // namespace troupe::key_entries
