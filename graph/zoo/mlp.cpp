// MXNet's MNIST multilayer perceptron: flatten, fc 128, ReLU, fc 64, ReLU, fc classes.
//
// 109,386 parameters for a 1x28x28 input and 10 classes. Weights use Xavier-uniform init, the
// initializer of MXNet's example and of Glorot & Bengio's paper for such nets. num_layers
// counts weight layers, so only 3 is accepted.
#include "graph/zoo/zoo_builders.hpp"
#include <troupe/graph/layers/elementwise_layers.hpp>
#include <troupe/graph/layers/fully_connected_layer.hpp>

namespace troupe {

std::unique_ptr<model> build_mlp(const model_spec& spec) {
  require_depth(spec, "mlp", {3});
  auto m = std::make_unique<model>("mlp", spec.sample_shape, spec.classes);
  auto id = m->add("flatten", std::make_unique<flatten_layer>(), {model::input});
  id = m->add("fc1", std::make_unique<fully_connected_layer>(128), {id});
  id = m->add("relu1", std::make_unique<relu_layer>(), {id});
  id = m->add("fc2", std::make_unique<fully_connected_layer>(64), {id});
  id = m->add("relu2", std::make_unique<relu_layer>(), {id});
  m->add("fc3", std::make_unique<fully_connected_layer>(spec.classes), {id});
  m->finalize(spec.seed);
  return m;
}

} // namespace troupe
