// The LeNet of MXNet's / TensorFlow's MNIST tutorials (a widened LeNet-5):
//   conv1 5x5x32 pad 2 + ReLU, 2x2 max pool, conv2 5x5x64 pad 2 + ReLU, 2x2 max pool,
//   fc1 1024 + ReLU, fc2 classes.
// 3,274,634 parameters for 1x28x28 and 10 classes (fc1 alone holds 3,212,288 of them).
//
// Convs (with bias) use He-normal init since they feed ReLUs; the fc layers use Xavier-uniform,
// as in the tutorials. num_layers counts weight layers, so only 4 is accepted.
#include "graph/zoo/zoo_builders.hpp"
#include <troupe/graph/layers/elementwise_layers.hpp>
#include <troupe/graph/layers/fully_connected_layer.hpp>
#include <troupe/graph/layers/pool_layer.hpp>

namespace troupe {

std::unique_ptr<model> build_lenet(const model_spec& spec) {
  require_depth(spec, "lenet", {4});
  require_image_input(spec, "lenet");
  auto m = std::make_unique<model>("lenet", spec.sample_shape, spec.classes);
  auto max_pool = [] {
    return std::make_unique<pool_layer>(pool_layer::square(pool_kind::max, 2, 2));
  };

  auto id = m->add("conv1", std::make_unique<conv2d_layer>(conv_options(32, 5, 1, 2, true)),
                   {model::input});
  id = m->add("relu1", std::make_unique<relu_layer>(), {id});
  id = m->add("pool1", max_pool(), {id});
  id = m->add("conv2", std::make_unique<conv2d_layer>(conv_options(64, 5, 1, 2, true)), {id});
  id = m->add("relu2", std::make_unique<relu_layer>(), {id});
  id = m->add("pool2", max_pool(), {id});
  id = m->add("fc1", std::make_unique<fully_connected_layer>(1024), {id});
  id = m->add("relu3", std::make_unique<relu_layer>(), {id});
  m->add("fc2", std::make_unique<fully_connected_layer>(spec.classes), {id});
  m->finalize(spec.seed);
  return m;
}

} // namespace troupe
