// VGG (Simonyan & Zisserman 2014) with batch normalization after every conv, as in today's
// reference "vgg_bn" models. Depth 11, 13, 16 (default) or 19 picks the paper's configuration
// A, B, D or E: 3x3 pad 1 convs (with bias) + BN + ReLU, 2x2/2 max pools between blocks.
//
// * 32x32 inputs (CIFAR): after five pools the map is 1x1x512, then flatten and fc 512 ->
//   classes. VGG-16: 14,728,266 parameters for 3x32x32 and 10 classes.
// * 224x224 inputs (ImageNet): the paper's head on the 7x7x512 map, fc 4096 + ReLU + dropout
//   0.5, fc 4096 + ReLU + dropout 0.5, fc classes. VGG-16: 138,365,992 parameters for 1000
//   classes.
// Other input sizes throw: the head is sized for exactly these two.
//
// Convs use He-normal init (ReLU), fc layers Xavier-uniform (the paper's own later choice of
// Glorot init).
#include "graph/zoo/zoo_builders.hpp"
#include <troupe/graph/layers/dropout_layer.hpp>
#include <troupe/graph/layers/elementwise_layers.hpp>
#include <troupe/graph/layers/fully_connected_layer.hpp>
#include <troupe/graph/layers/pool_layer.hpp>

#include <stdexcept>

namespace troupe {

namespace {

/// Output channels per conv; 0 marks a max pool.
const std::vector<int>& configuration(int depth) {
  static const std::vector<int> a{64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
  static const std::vector<int> b{64, 64, 0, 128, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
  static const std::vector<int> d{64, 64,  0,   128, 128, 0,   256, 256, 256,
                                  0,  512, 512, 512, 0,   512, 512, 512, 0};
  static const std::vector<int> e{64,  64,  0,   128, 128, 0,   256, 256, 256, 256, 0,
                                  512, 512, 512, 512, 0,   512, 512, 512, 512, 0};
  switch (depth) {
  case 11:
    return a;
  case 13:
    return b;
  case 19:
    return e;
  default:
    return d;
  }
}

/// Conv blocks named block<b>.conv<i> / .bn<i> / .relu<i> and pool<b>, as in the paper's
/// table; returns the last pool.
model::node_id add_features(model& m, int depth) {
  model::node_id id = model::input;
  int block = 1, conv = 1;
  for (int channels : configuration(depth)) {
    const std::string prefix = "block" + std::to_string(block);
    if (channels == 0) {
      id = m.add("pool" + std::to_string(block),
                 std::make_unique<pool_layer>(pool_layer::square(pool_kind::max, 2, 2)), {id});
      ++block;
      conv = 1;
      continue;
    }
    id = add_conv_bn(m, prefix, std::to_string(conv++), id, conv_options(channels, 3, 1, 1, true),
                     true);
  }
  return id;
}

void add_imagenet_head(model& m, model::node_id id, int classes) {
  id = m.add("flatten", std::make_unique<flatten_layer>(), {id});
  for (int i = 1; i <= 2; ++i) {
    const std::string n = std::to_string(i);
    id = m.add("fc" + n, std::make_unique<fully_connected_layer>(4096), {id});
    id = m.add("relu_fc" + n, std::make_unique<relu_layer>(), {id});
    id = m.add("dropout" + n, std::make_unique<dropout_layer>(0.5f), {id});
  }
  m.add("fc3", std::make_unique<fully_connected_layer>(classes), {id});
}

} // namespace

std::unique_ptr<model> build_vgg(const model_spec& spec) {
  require_depth(spec, "vgg", {11, 13, 16, 19});
  require_image_input(spec, "vgg");
  const std::int64_t h = spec.sample_shape[1], w = spec.sample_shape[2];
  const bool cifar = h == 32 && w == 32;
  if (!cifar && !(h == 224 && w == 224))
    throw std::invalid_argument("vgg supports 32x32 (CIFAR head) and 224x224 (ImageNet head) "
                                "inputs, got "
                                + shape_string(spec.sample_shape));
  const int depth = spec.num_layers != 0 ? spec.num_layers : 16;
  auto m = std::make_unique<model>("vgg-" + std::to_string(depth), spec.sample_shape, spec.classes);
  auto id = add_features(*m, depth);
  if (cifar) {
    id = m->add("flatten", std::make_unique<flatten_layer>(), {id});
    m->add("fc", std::make_unique<fully_connected_layer>(spec.classes), {id});
  } else {
    add_imagenet_head(*m, id, spec.classes);
  }
  m->finalize(spec.seed);
  return m;
}

} // namespace troupe
