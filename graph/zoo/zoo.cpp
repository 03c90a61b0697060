// The zoo's entry point: name -> builder dispatch, and the helpers the family builders share.
//
// Every network is built with the same conventions: layers named for reading in a summary
// ("stage2.block1.conv1"), parameters "<layer>.<role>", and the whole model initialized from
// spec.seed by model::finalize.
#include <troupe/graph/zoo.hpp>
#include <troupe/kernels/cpu_support.hpp>

#include <stdexcept>

#include "graph/zoo/zoo_builders.hpp"
#include <troupe/graph/layers/batch_norm_layer.hpp>
#include <troupe/graph/layers/elementwise_layers.hpp>

namespace troupe {

namespace {

using builder = std::unique_ptr<model> (*)(const model_spec&);

struct zoo_entry {
  const char* name;
  builder build;
};

const std::vector<zoo_entry>& zoo_entries() {
  static const std::vector<zoo_entry> entries{
    {"mlp", build_mlp},       {"lenet", build_lenet},
    {"resnet", build_resnet}, {"inception-bn", build_inception_bn},
    {"vgg", build_vgg},
  };
  return entries;
}

std::string comma_list(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items)
    text += (text.empty() ? "" : ", ") + item;
  return text;
}

} // namespace

std::unique_ptr<model> build_model(const model_spec& spec) {
  require_cpu_support(); // before any kernel compiled for the baseline can run
  for (const auto& entry : zoo_entries())
    if (spec.network == entry.name)
      return entry.build(spec);
  throw std::invalid_argument("unknown network '" + spec.network + "'; the zoo has "
                              + comma_list(zoo_networks()));
}

std::vector<std::string> zoo_networks() {
  std::vector<std::string> names;
  for (const auto& entry : zoo_entries())
    names.emplace_back(entry.name);
  return names;
}

conv2d_layer_options conv_options(std::int64_t out_channels, std::int64_t kernel,
                                  std::int64_t stride, std::int64_t pad, bool bias) {
  conv2d_layer_options options;
  options.out_channels = out_channels;
  options.kernel = kernel;
  options.stride = stride;
  options.pad = pad;
  options.bias = bias;
  return options;
}

std::string join_name(const std::string& prefix, const std::string& leaf) {
  return prefix.empty() ? leaf : prefix + "." + leaf;
}

model::node_id add_conv_bn(model& m, const std::string& prefix, const std::string& suffix,
                           model::node_id input, const conv2d_layer_options& options, bool relu) {
  auto id =
    m.add(join_name(prefix, "conv" + suffix), std::make_unique<conv2d_layer>(options), {input});
  id = m.add(join_name(prefix, "bn" + suffix), std::make_unique<batch_norm_layer>(), {id});
  if (relu)
    id = m.add(join_name(prefix, "relu" + suffix), std::make_unique<relu_layer>(), {id});
  return id;
}

void require_image_input(const model_spec& spec, const std::string& network) {
  const shape_t& s = spec.sample_shape;
  bool ok = s.size() == 3;
  for (auto d : s)
    ok = ok && d > 0;
  if (!ok)
    throw std::invalid_argument(network + " needs a C x H x W image sample shape, got "
                                + shape_string(s));
}

void require_depth(const model_spec& spec, const std::string& network,
                   const std::vector<int>& supported, const std::string& note) {
  if (spec.num_layers == 0)
    return;
  for (int depth : supported)
    if (spec.num_layers == depth)
      return;
  std::vector<std::string> names;
  for (int depth : supported)
    names.push_back(std::to_string(depth));
  names.push_back("0 (the default)");
  throw std::invalid_argument(network
                              + " does not support num_layers = " + std::to_string(spec.num_layers)
                              + "; supported: " + comma_list(names) + note);
}

} // namespace troupe
