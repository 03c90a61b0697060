// Weight initializers from the original papers, with a seeded generator so runs repeat.
//   he_normal   (He et al. 2015):      N(0, sqrt(2 / fan_in))          -- ReLU nets, ResNet
//   xavier_uniform (Glorot 2010):      U(+-sqrt(6 / (fan_in + fan_out))) -- MLP, LeNet, VGG fc
// fan_in = prod(shape[1:]), fan_out = shape[0] * prod(shape[2:]) for conv / fc weights.
#pragma once

#include <cstdint>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

enum class init_kind { zeros, ones, he_normal, xavier_uniform };

/// Fills `t` according to `kind`; `seed` fully determines the values.
void initialize(tensor& t, init_kind kind, std::uint64_t seed);

} // namespace troupe
