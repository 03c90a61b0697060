// Residual networks (He et al. 2015), in the paper's two designs, picked by input size:
//
// * Inputs up to 32x32 (CIFAR, MNIST): depth 6n+2. 3x3 conv 16 + BN + ReLU, three stages of n
//   basic blocks with 16, 32, 64 channels (stride 2 entering stages 2 and 3), global average
//   pool, fc. Shortcuts are the paper's option A for CIFAR: identity, or a stride-2 subsample
//   zero-padded to the wider channel count where the shape changes, so they add no parameters.
//   ResNet-20: 269,722 parameters, ResNet-110: 1,727,962 (the paper's 0.27M and 1.7M; the
//   often-quoted 272,474 / 1,730,714 belong to option B, which adds 1x1 projection convs + BN).
// * Larger inputs (ImageNet 224x224): depth 18/34 (basic blocks) or 50/101/152 (bottlenecks),
//   7x7/2 conv 64 + BN + ReLU, 3x3/2 max pool, four stages of 64..512 channels, projection
//   shortcuts (1x1 conv + BN) where the shape changes, global average pool, fc. The bottleneck
//   strides in its 3x3 conv (the "v1.5" placement of today's reference models; parameter
//   counts are those of the paper). ResNet-18: 11,689,512, ResNet-50: 25,557,032 (1000 classes).
//
// Convs have no bias (batch norm follows). All weights, fc included, use He-normal init, as in
// the paper. Defaults: depth 20 for small inputs, 50 otherwise.
#include "graph/zoo/zoo_builders.hpp"
#include <troupe/graph/layers/elementwise_layers.hpp>
#include <troupe/graph/layers/fully_connected_layer.hpp>
#include <troupe/graph/layers/pool_layer.hpp>

#include <stdexcept>

namespace troupe {

namespace {

struct imagenet_design {
  int depth;
  bool bottleneck;
  std::vector<int> blocks; ///< per stage
};

const std::vector<imagenet_design>& imagenet_designs() {
  static const std::vector<imagenet_design> designs{
    {18, false, {2, 2, 2, 2}},  {34, false, {3, 4, 6, 3}},  {50, true, {3, 4, 6, 3}},
    {101, true, {3, 4, 23, 3}}, {152, true, {3, 8, 36, 3}},
  };
  return designs;
}

/// conv-bn-relu-conv-bn + shortcut, then ReLU. `option_a` picks the CIFAR zero-pad shortcut,
/// otherwise a projection, where the shape changes.
model::node_id basic_block(model& m, const std::string& prefix, model::node_id input,
                           std::int64_t in_channels, std::int64_t width, std::int64_t stride,
                           bool option_a) {
  auto id = add_conv_bn(m, prefix, "1", input, conv_options(width, 3, stride, 1), true);
  id = add_conv_bn(m, prefix, "2", id, conv_options(width, 3, 1, 1), false);
  auto shortcut = input;
  if (stride != 1 || in_channels != width) {
    if (option_a)
      shortcut =
        m.add(prefix + ".shortcut", std::make_unique<shortcut_pad_layer>(width, stride), {input});
    else
      shortcut = add_conv_bn(m, prefix, "_proj", input, conv_options(width, 1, stride), false);
  }
  id = m.add(prefix + ".add", std::make_unique<add_layer>(), {id, shortcut});
  return m.add(prefix + ".relu", std::make_unique<relu_layer>(), {id});
}

/// 1x1 reduce, 3x3 (strided), 1x1 expand to 4x width, projection shortcut where needed.
model::node_id bottleneck_block(model& m, const std::string& prefix, model::node_id input,
                                std::int64_t in_channels, std::int64_t width, std::int64_t stride) {
  const std::int64_t out_channels = 4 * width;
  auto id = add_conv_bn(m, prefix, "1", input, conv_options(width, 1), true);
  id = add_conv_bn(m, prefix, "2", id, conv_options(width, 3, stride, 1), true);
  id = add_conv_bn(m, prefix, "3", id, conv_options(out_channels, 1), false);
  auto shortcut = input;
  if (stride != 1 || in_channels != out_channels)
    shortcut = add_conv_bn(m, prefix, "_proj", input, conv_options(out_channels, 1, stride), false);
  id = m.add(prefix + ".add", std::make_unique<add_layer>(), {id, shortcut});
  return m.add(prefix + ".relu", std::make_unique<relu_layer>(), {id});
}

std::string block_name(std::size_t stage, int block) {
  return "stage" + std::to_string(stage + 1) + ".block" + std::to_string(block + 1);
}

void add_head(model& m, model::node_id id, int classes) {
  id = m.add("pool", std::make_unique<pool_layer>(pool_layer::global_average()), {id});
  m.add("fc", std::make_unique<fully_connected_layer>(classes, init_kind::he_normal), {id});
}

std::unique_ptr<model> build_cifar_resnet(const model_spec& spec, int depth) {
  if (depth < 8 || (depth - 2) % 6 != 0)
    throw std::invalid_argument(
      "resnet for inputs up to 32x32 supports depth 6n+2 (20, 32, 44, 56, 110, ...), got "
      + std::to_string(depth));
  const int blocks = (depth - 2) / 6;
  auto m =
    std::make_unique<model>("resnet-" + std::to_string(depth), spec.sample_shape, spec.classes);
  auto id = add_conv_bn(*m, "", "1", model::input, conv_options(16, 3, 1, 1), true);
  std::int64_t channels = 16;
  for (std::size_t stage = 0; stage < 3; ++stage) {
    const std::int64_t width = 16 << stage;
    for (int b = 0; b < blocks; ++b) {
      const std::int64_t stride = stage > 0 && b == 0 ? 2 : 1;
      id = basic_block(*m, block_name(stage, b), id, channels, width, stride, true);
      channels = width;
    }
  }
  add_head(*m, id, spec.classes);
  return m;
}

std::unique_ptr<model> build_imagenet_resnet(const model_spec& spec, int depth) {
  const imagenet_design* design = nullptr;
  for (const auto& d : imagenet_designs())
    if (d.depth == depth)
      design = &d;
  if (design == nullptr)
    throw std::invalid_argument("resnet for inputs larger than 32x32 supports depth 18, 34, 50, "
                                "101, 152, got "
                                + std::to_string(depth));
  auto m =
    std::make_unique<model>("resnet-" + std::to_string(depth), spec.sample_shape, spec.classes);
  auto id = add_conv_bn(*m, "", "1", model::input, conv_options(64, 7, 2, 3), true);
  id = m->add("pool1", std::make_unique<pool_layer>(pool_layer::square(pool_kind::max, 3, 2, 1)),
              {id});
  std::int64_t channels = 64;
  for (std::size_t stage = 0; stage < design->blocks.size(); ++stage) {
    const std::int64_t width = 64 << stage;
    for (int b = 0; b < design->blocks[stage]; ++b) {
      const std::int64_t stride = stage > 0 && b == 0 ? 2 : 1;
      const std::string prefix = block_name(stage, b);
      if (design->bottleneck) {
        id = bottleneck_block(*m, prefix, id, channels, width, stride);
        channels = 4 * width;
      } else {
        id = basic_block(*m, prefix, id, channels, width, stride, false);
        channels = width;
      }
    }
  }
  add_head(*m, id, spec.classes);
  return m;
}

} // namespace

std::unique_ptr<model> build_resnet(const model_spec& spec) {
  require_image_input(spec, "resnet");
  const bool small = spec.sample_shape[1] <= 32 && spec.sample_shape[2] <= 32;
  const int depth = spec.num_layers != 0 ? spec.num_layers : (small ? 20 : 50);
  auto m = small ? build_cifar_resnet(spec, depth) : build_imagenet_resnet(spec, depth);
  m->finalize(spec.seed);
  return m;
}

} // namespace troupe
