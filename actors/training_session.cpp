// Implementation notes: the caller's thread blocks on a scoped actor until the coordinator
// answers; every actor spawned here is linked to nothing and is shut down explicitly at the
// end, so a failed run leaves no actor behind to hang the actor system's destructor.
#include "actors/training_session.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include <caf/all.hpp>

#include "actors/actor_errors.hpp"
#include "actors/compute_actor.hpp"
#include "actors/coordinator_actor.hpp"
#include "actors/metrics_actor.hpp"

namespace troupe {

std::vector<std::vector<std::size_t>> assign_keys(const std::vector<std::int64_t>& sizes,
                                                  int shards) {
  if (shards < 1)
    throw std::invalid_argument("shards must be at least 1, got " + std::to_string(shards));
  std::vector<std::size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
  std::vector<std::vector<std::size_t>> out(static_cast<std::size_t>(shards));
  std::vector<std::int64_t> load(out.size(), 0);
  for (auto slot : order) {
    auto target = std::min_element(load.begin(), load.end()) - load.begin();
    out[target].push_back(slot);
    load[target] += sizes[slot];
  }
  for (auto& slots : out)
    std::sort(slots.begin(), slots.end());
  out.erase(std::remove_if(out.begin(), out.end(), [](auto& s) { return s.empty(); }), out.end());
  return out;
}

namespace {

std::vector<shard_route> spawn_shards(caf::actor_system& system, model& m,
                                      const training_options& options) {
  std::vector<std::int64_t> sizes;
  for (auto* p : m.parameters())
    sizes.push_back(p->value.numel());
  std::vector<shard_route> routes;
  for (auto& slots : assign_keys(sizes, options.shards)) {
    std::vector<shard_key> keys;
    for (auto slot : slots) {
      auto* p = m.parameters()[slot];
      keys.push_back(shard_key{p->name, p->value, p->weight_decay});
    }
    routes.push_back(shard_route{spawn_param_shard(system, std::move(keys), options.optimizer),
                                 slots});
  }
  return routes;
}

metrics_options make_metrics_options(const training_options& options, std::ostream& sink) {
  metrics_options m;
  m.out = options.log ? options.log : &sink;
  m.display_batches = options.log ? options.display_batches : 0;
  m.progress_bar = options.log && options.progress_bar;
  m.expect_validation = options.validate;
  m.jsonl_path = options.metrics_path;
  m.tags = {{"network", options.model.network},
            {"dataset", options.train_data.name},
            {"batch_size", std::to_string(options.train_batches.batch_size)}};
  return m;
}

} // namespace

training_result run_training(caf::actor_system& system, const training_options& options) {
  // Everything that can fail on bad input happens before the first spawn.
  auto train_set = open_dataset(options.train_data);
  auto validation_set = open_dataset(options.validation_data);
  auto train_source = std::make_shared<const batch_source>(train_set, options.train_batches);
  auto validation_source = std::make_shared<const batch_source>(validation_set,
                                                                options.validation_batches);
  auto spec = options.model;
  spec.sample_shape = train_set->sample_shape();
  spec.classes = train_set->classes();
  auto replica = build_model(spec);
  lr_schedule check_schedule(options.optimizer.schedule);
  if (options.log)
    *options.log << "Start training " << replica->name() << " (" << replica->parameter_count()
                 << " parameters) on " << train_set->description() << ": "
                 << train_source->samples_per_epoch() << " examples, "
                 << train_source->batches_per_epoch() << " batches of "
                 << options.train_batches.batch_size << "; validation on "
                 << validation_set->description() << " (" << validation_set->size()
                 << " examples); " << options.shards << " parameter shard(s)" << std::endl;
  std::ostringstream discard;
  auto metrics = spawn_metrics(system, make_metrics_options(options, discard));

  compute_wiring wiring;
  wiring.train_loader = spawn_loader(system, train_source, options.loader);
  wiring.validation_loader = spawn_loader(system, validation_source, options.loader);
  wiring.shards = spawn_shards(system, *replica, options);
  wiring.metrics = metrics;
  wiring.batches_per_epoch = train_source->batches_per_epoch();
  std::vector<caf::actor> all{metrics, wiring.train_loader, wiring.validation_loader};
  for (auto& r : wiring.shards)
    all.push_back(r.shard);
  auto compute = spawn_compute(system, std::move(replica), wiring);
  auto coordinator = spawn_coordinator(system, {compute}, metrics,
                                       coordinator_options{options.epochs, 0, options.validate});
  all.push_back(compute);
  all.push_back(coordinator);

  caf::scoped_actor self{system};
  training_result result;
  caf::error failure;
  self->request(coordinator, caf::infinite, run_atom::value)
    .receive([&](training_result& r) { result = std::move(r); },
             [&](caf::error& err) { failure = std::move(err); });
  for (auto& a : all)
    self->send_exit(a, caf::exit_reason::user_shutdown);
  if (failure)
    throw std::runtime_error(error_text(failure));
  return result;
}

} // namespace troupe
