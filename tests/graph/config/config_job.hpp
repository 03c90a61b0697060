// The training_job of a parsed config, for graph tests that plan configs. The real mapping is
// apps' to_training_job (apps/config_options.cpp), which graph tests cannot channel; this fills
// the same fields the same way for every value the placement plan reads (model, datasets,
// batch sizes, shards, topology, keys) and leaves the rest (learning rate, data directories)
// at their defaults. The CLI tests (`troupe check` on every example) cover the real mapping.
#pragma once

#include <algorithm>

#include <troupe/graph/config/job_config.hpp>
#include <troupe/graph/job.hpp>

namespace troupe::test {

inline dataset_options dataset_of(const job_config& c, const data_config& d, split which) {
  dataset_options o;
  o.name = io_dataset_name(d.dataset.value);
  o.dir = d.dir.value;
  o.which = which;
  o.synthetic_shape = shape_t(d.shape.value.begin(), d.shape.value.end());
  o.synthetic_classes = d.classes.value;
  o.synthetic_size = d.examples.value;
  o.synthetic_seed = static_cast<std::uint64_t>(c.run.seed.value);
  return o;
}

inline training_job job_of(const job_config& c) {
  training_job j;
  j.model = model_spec_of(c);
  j.train_data =
    dataset_of(c, c.train_data, c.train_data.split.value == "test" ? split::test : split::train);
  j.validation_data =
    c.validation_data.enabled ? dataset_of(
      c, c.validation_data, c.validation_data.split.value == "train" ? split::train : split::test)
                              : j.train_data;
  j.train_batches.batch_size = c.train_data.batch.value;
  j.validation_batches.batch_size = c.validation_data.batch.value;
  j.prefetch_depth = c.run.prefetch.value;
  j.epochs = c.run.epochs.value;
  j.validate = c.validation_data.enabled;
  j.validate_every = std::max<std::int64_t>(1, c.run.eval_every.value);
  j.shards = c.cluster.shards.value;
  j.nodes = cluster_nodes{c.cluster.server_nodes.value, c.cluster.worker_nodes.value};
  auto& t = j.topology;
  t.name = c.topology.name.value;
  t.workers = c.cluster.workers.value;
  t.levels = c.topology.levels;
  t.staleness = c.topology.staleness;
  t.machines = t.level(aggregation_scope::machine) ? c.topology.machines.value : 1;
  t.deterministic = c.topology.deterministic.value;
  t.overlap = c.cluster.overlap.value;
  t.priority = c.cluster.priority.value;
  t.keys = key_options_of(c);
  return j;
}

} // namespace troupe::test
