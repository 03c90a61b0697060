// Internal to the zoo: one builder per network family, and the small helpers they share
// (conv + batch norm + ReLU units, argument checks). `build_model` in zoo.cpp dispatches on the
// network name; each builder checks num_layers and the input shape for its own family.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <troupe/graph/layers/conv2d_layer.hpp>
#include <troupe/graph/model.hpp>
#include <troupe/graph/zoo.hpp>

namespace troupe {

std::unique_ptr<model> build_mlp(const model_spec& spec);
std::unique_ptr<model> build_lenet(const model_spec& spec);
std::unique_ptr<model> build_resnet(const model_spec& spec);
std::unique_ptr<model> build_inception_bn(const model_spec& spec);
std::unique_ptr<model> build_vgg(const model_spec& spec);

/// Conv options read at the call site: conv_options(64, 3, 1, 1) is 64 filters 3x3/1 pad 1.
conv2d_layer_options conv_options(std::int64_t out_channels, std::int64_t kernel,
                                  std::int64_t stride = 1, std::int64_t pad = 0, bool bias = false);

/// "<prefix>.<leaf>", or just leaf for an empty prefix.
std::string join_name(const std::string& prefix, const std::string& leaf);

/// Adds prefix.conv<suffix>, prefix.bn<suffix> and (if `relu`) prefix.relu<suffix>; returns the
/// last node.
model::node_id add_conv_bn(model& m, const std::string& prefix, const std::string& suffix,
                           model::node_id input, const conv2d_layer_options& options, bool relu);

/// Throws std::invalid_argument unless the sample is C x H x W with positive extents.
void require_image_input(const model_spec& spec, const std::string& network);

/// Throws std::invalid_argument listing `supported` unless num_layers is one of them.
void require_depth(const model_spec& spec, const std::string& network,
                   const std::vector<int>& supported, const std::string& note = "");

} // namespace troupe
