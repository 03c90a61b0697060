// The model zoo: the seeds' networks by name, built as `model` DAGs.
//
//   mlp           784-128-64-10 with ReLU (MXNet's MNIST MLP)
//   lenet         conv5x5x32 pad 2, pool, conv5x5x64 pad 2, pool, fc1024, fc10 (3.27M params)
//   resnet        inputs up to 32x32: depth 6n+2 (default 20; 32/44/56/110...), option-A
//                 shortcuts; larger (3x224x224): 18/34 (basic blocks), 50 (default)/101/152
//                 (bottlenecks), projection shortcuts
//   inception-bn  the small CIFAR Inception of MXNet's examples for <= 32x32 inputs,
//                 BN-Inception (Ioffe & Szegedy 2015) for larger (224x224) ones
//   vgg           VGG 11/13/16 (default)/19 with batch norm: CIFAR head (512 -> classes) for
//                 32x32, the 4096-4096 dropout head for 224x224
//
// num_layers counts weight layers (mlp 3, lenet 4), as network names do.
// Which variant a name builds depends on num_layers and the input shape; an impossible pair
// (resnet 21, vgg on 28x28 MNIST...) throws std::invalid_argument saying what is supported.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <troupe/graph/model.hpp>

namespace troupe {

struct model_spec {
  std::string network = "mlp";
  int num_layers = 0;              ///< 0 = the network's default depth
  shape_t sample_shape{1, 28, 28}; ///< one example, C x H x W
  int classes = 10;
  std::uint64_t seed = 0;
};

/// Fields in declaration order, for CAF's serializers and value_hash.hpp (no CAF here).
template <class Inspector> typename Inspector::result_type inspect(Inspector& f, model_spec& x) {
  return f(x.network, x.num_layers, x.sample_shape, x.classes, x.seed);
}

std::unique_ptr<model> build_model(const model_spec& spec);
/// Names accepted by build_model, for --help and error messages.
std::vector<std::string> zoo_networks();

} // namespace troupe
