// Inception with batch normalization, in the two forms of MXNet's examples, picked by input
// size. Every conv is followed by BN + ReLU ("conv_factory"); convs keep MXNet's default bias.
//
// * Inputs up to 32x32: MXNet's "inception-bn-28-small" CIFAR network. conv 3x3 96, then
//   simple units (1x1 and 3x3 branches, concatenated) and downsample units (3x3/2 conv and
//   3x3/2 max pool, concatenated):
//     (32,32) (32,48) down 80 | (112,48) (96,64) (80,80) (48,96) down 96 | (176,160) (176,160)
//   then global average pool (MXNet's 7x7 pool on 28x28 input) and fc. The downsample pool
//   pads by 1 so both branches agree on the output size for odd and even inputs.
// * Larger inputs (224x224): BN-Inception (Ioffe & Szegedy 2015) as in MXNet's
//   symbols/inception-bn.py: 7x7/2 conv 64, 3x3/2 max pool, 1x1 conv 64, 3x3 conv 192, 3x3/2
//   max pool, inception 3a 3b 3c(down) 4a-4e(4e down) 5a 5b, global average pool, fc. Pools
//   without padding round up (MXNet's "full" convention), so 224 -> 112 -> 56 -> 28 -> 14 -> 7.
//
// All weights use He-normal init (MXNet's Xavier(gaussian, in, 2) is the same distribution).
// num_layers must be 0: both networks have one fixed depth.
#include "graph/zoo/zoo_builders.hpp"
#include <troupe/graph/layers/elementwise_layers.hpp>
#include <troupe/graph/layers/fully_connected_layer.hpp>
#include <troupe/graph/layers/pool_layer.hpp>

namespace troupe {

namespace {

/// conv + BN + ReLU with MXNet's default conv bias; layers prefix.conv, prefix.bn, prefix.relu.
model::node_id unit(model& m, const std::string& prefix, model::node_id input,
                    std::int64_t out_channels, std::int64_t kernel, std::int64_t stride = 1,
                    std::int64_t pad = 0) {
  return add_conv_bn(m, prefix, "", input, conv_options(out_channels, kernel, stride, pad, true),
                     true);
}

model::node_id pool(model& m, const std::string& name, model::node_id input, pool_kind kind,
                    std::int64_t stride, std::int64_t pad, bool ceil_mode) {
  return m.add(name,
               std::make_unique<pool_layer>(pool_layer::square(kind, 3, stride, pad, ceil_mode)),
               {input});
}

model::node_id concat(model& m, const std::string& prefix, std::vector<model::node_id> parts) {
  return m.add(prefix + ".concat", std::make_unique<concat_layer>(), std::move(parts));
}

model::node_id simple_unit(model& m, const std::string& prefix, model::node_id input,
                           std::int64_t ch_1x1, std::int64_t ch_3x3) {
  auto a = unit(m, prefix + ".1x1", input, ch_1x1, 1);
  auto b = unit(m, prefix + ".3x3", input, ch_3x3, 3, 1, 1);
  return concat(m, prefix, {a, b});
}

model::node_id downsample_unit(model& m, const std::string& prefix, model::node_id input,
                               std::int64_t ch_3x3) {
  auto a = unit(m, prefix + ".3x3", input, ch_3x3, 3, 2, 1);
  auto b = pool(m, prefix + ".pool", input, pool_kind::max, 2, 1, false);
  return concat(m, prefix, {a, b});
}

std::unique_ptr<model> build_small(const model_spec& spec) {
  auto m = std::make_unique<model>("inception-bn-small", spec.sample_shape, spec.classes);
  auto id = unit(*m, "stem", model::input, 96, 3, 1, 1);
  id = simple_unit(*m, "in3a", id, 32, 32);
  id = simple_unit(*m, "in3b", id, 32, 48);
  id = downsample_unit(*m, "in3c", id, 80);
  id = simple_unit(*m, "in4a", id, 112, 48);
  id = simple_unit(*m, "in4b", id, 96, 64);
  id = simple_unit(*m, "in4c", id, 80, 80);
  id = simple_unit(*m, "in4d", id, 48, 96);
  id = downsample_unit(*m, "in4e", id, 96);
  id = simple_unit(*m, "in5a", id, 176, 160);
  id = simple_unit(*m, "in5b", id, 176, 160);
  id = m->add("pool", std::make_unique<pool_layer>(pool_layer::global_average()), {id});
  m->add("fc", std::make_unique<fully_connected_layer>(spec.classes, init_kind::he_normal), {id});
  return m;
}

struct factory_a {
  std::int64_t c1x1, c3x3_reduce, c3x3, d3x3_reduce, d3x3;
  pool_kind pool;
  std::int64_t proj;
};

/// Four branches: 1x1; 1x1 -> 3x3; 1x1 -> 3x3 -> 3x3; 3x3/1 pool -> 1x1 projection.
model::node_id inception_a(model& m, const std::string& prefix, model::node_id input,
                           const factory_a& f) {
  auto a = unit(m, prefix + ".1x1", input, f.c1x1, 1);
  auto b = unit(m, prefix + ".3x3_reduce", input, f.c3x3_reduce, 1);
  b = unit(m, prefix + ".3x3", b, f.c3x3, 3, 1, 1);
  auto c = unit(m, prefix + ".double_3x3_reduce", input, f.d3x3_reduce, 1);
  c = unit(m, prefix + ".double_3x3_0", c, f.d3x3, 3, 1, 1);
  c = unit(m, prefix + ".double_3x3_1", c, f.d3x3, 3, 1, 1);
  auto d = pool(m, prefix + ".pool", input, f.pool, 1, 1, false);
  d = unit(m, prefix + ".proj", d, f.proj, 1);
  return concat(m, prefix, {a, b, c, d});
}

/// The grid-reducing unit: 1x1 -> 3x3/2; 1x1 -> 3x3 -> 3x3/2; 3x3/2 max pool.
model::node_id inception_b(model& m, const std::string& prefix, model::node_id input,
                           std::int64_t c3x3_reduce, std::int64_t c3x3, std::int64_t d3x3_reduce,
                           std::int64_t d3x3) {
  auto a = unit(m, prefix + ".3x3_reduce", input, c3x3_reduce, 1);
  a = unit(m, prefix + ".3x3", a, c3x3, 3, 2, 1);
  auto b = unit(m, prefix + ".double_3x3_reduce", input, d3x3_reduce, 1);
  b = unit(m, prefix + ".double_3x3_0", b, d3x3, 3, 1, 1);
  b = unit(m, prefix + ".double_3x3_1", b, d3x3, 3, 2, 1);
  auto c = pool(m, prefix + ".pool", input, pool_kind::max, 2, 0, true);
  return concat(m, prefix, {a, b, c});
}

std::unique_ptr<model> build_full(const model_spec& spec) {
  auto m = std::make_unique<model>("inception-bn", spec.sample_shape, spec.classes);
  auto id = unit(*m, "stem1", model::input, 64, 7, 2, 3);
  id = pool(*m, "pool1", id, pool_kind::max, 2, 0, true);
  id = unit(*m, "stem2_reduce", id, 64, 1);
  id = unit(*m, "stem2", id, 192, 3, 1, 1);
  id = pool(*m, "pool2", id, pool_kind::max, 2, 0, true);
  const pool_kind avg = pool_kind::average;
  id = inception_a(*m, "in3a", id, {64, 64, 64, 64, 96, avg, 32});
  id = inception_a(*m, "in3b", id, {64, 64, 96, 64, 96, avg, 64});
  id = inception_b(*m, "in3c", id, 128, 160, 64, 96);
  id = inception_a(*m, "in4a", id, {224, 64, 96, 96, 128, avg, 128});
  id = inception_a(*m, "in4b", id, {192, 96, 128, 96, 128, avg, 128});
  id = inception_a(*m, "in4c", id, {160, 128, 160, 128, 160, avg, 128});
  id = inception_a(*m, "in4d", id, {96, 128, 192, 160, 192, avg, 128});
  id = inception_b(*m, "in4e", id, 128, 192, 192, 256);
  id = inception_a(*m, "in5a", id, {352, 192, 320, 160, 224, avg, 128});
  id = inception_a(*m, "in5b", id, {352, 192, 320, 192, 224, pool_kind::max, 128});
  id = m->add("pool", std::make_unique<pool_layer>(pool_layer::global_average()), {id});
  m->add("fc", std::make_unique<fully_connected_layer>(spec.classes, init_kind::he_normal), {id});
  return m;
}

} // namespace

std::unique_ptr<model> build_inception_bn(const model_spec& spec) {
  require_depth(spec, "inception-bn", {}, "; the network has one fixed depth");
  require_image_input(spec, "inception-bn");
  const bool small = spec.sample_shape[1] <= 32 && spec.sample_shape[2] <= 32;
  auto m = small ? build_small(spec) : build_full(spec);
  m->finalize(spec.seed);
  return m;
}

} // namespace troupe
