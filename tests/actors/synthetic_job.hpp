// The small job the whole-run actor tests train: `network` on `examples` synthetic 1x28x28
// images (validation on the synthetic test split), SGD with momentum 0.9 at a constant 0.01,
// 2 epochs, no validation unless a test turns it on.
#pragma once

#include <cstdint>
#include <string>

#include <troupe/graph/job.hpp>

namespace troupe::test {

inline training_job synthetic_job(const std::string& network, std::int64_t examples) {
  training_job o;
  o.model.network = network;
  o.train_data.name = "synthetic";
  o.train_data.synthetic_shape = {1, 28, 28};
  o.train_data.synthetic_size = examples;
  o.validation_data = o.train_data;
  o.validation_data.which = split::test;
  o.validation_batches.batch_size = 256;
  o.validation_batches.shuffle = false;
  o.optimizer.sgd = sgd_options{0.9f, 1e-4f, false};
  o.optimizer.schedule.policy = lr_policy::constant;
  o.optimizer.schedule.base_lr = 0.01f;
  o.epochs = 2;
  o.validate = false;
  return o;
}

} // namespace troupe::test
