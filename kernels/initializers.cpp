// Seeded initializers. The mapping from mt19937_64 output to uniform and normal values is our
// own (53-bit uniform, Box-Muller), because libstdc++'s distributions are free to change their
// algorithms between releases, and a seed must give the same weights on every build.
#include <troupe/kernels/initializers.hpp>

#include <cmath>
#include <random>
#include <stdexcept>

namespace troupe {

namespace {

constexpr double two_pi = 6.283185307179586476925286766559;

// Uniform in [0, 1) from the top 53 bits.
double uniform01(std::mt19937_64& gen) {
  return static_cast<double>(gen() >> 11) * 0x1.0p-53;
}

struct fans {
  double in, out;
};

// fan_in = prod(shape[1:]), fan_out = shape[0] * prod(shape[2:]).
fans fans_of(const shape_t& s) {
  double receptive = 1;
  for (std::size_t i = 2; i < s.size(); ++i)
    receptive *= static_cast<double>(s[i]);
  double in = s.size() > 1 ? static_cast<double>(s[1]) * receptive : 1.0;
  double out = static_cast<double>(s[0]) * receptive;
  return {in, out};
}

void fill_normal(tensor& t, double stddev, std::mt19937_64& gen) {
  float* p = t.data();
  std::int64_t n = t.numel();
  for (std::int64_t i = 0; i < n; i += 2) {
    double u1 = 1.0 - uniform01(gen); // (0, 1]: log stays finite
    double u2 = uniform01(gen);
    double r = std::sqrt(-2.0 * std::log(u1)) * stddev;
    p[i] = static_cast<float>(r * std::cos(two_pi * u2));
    if (i + 1 < n)
      p[i + 1] = static_cast<float>(r * std::sin(two_pi * u2));
  }
}

void fill_uniform(tensor& t, double bound, std::mt19937_64& gen) {
  float* p = t.data();
  for (std::int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<float>((2.0 * uniform01(gen) - 1.0) * bound);
}

} // namespace

void initialize(tensor& t, init_kind kind, std::uint64_t seed) {
  if (t.empty())
    return;
  std::mt19937_64 gen(seed);
  fans f = fans_of(t.shape());
  switch (kind) {
  case init_kind::zeros:
    t.fill(0.0f);
    return;
  case init_kind::ones:
    t.fill(1.0f);
    return;
  case init_kind::he_normal:
    fill_normal(t, std::sqrt(2.0 / f.in), gen);
    return;
  case init_kind::xavier_uniform:
    fill_uniform(t, std::sqrt(6.0 / (f.in + f.out)), gen);
    return;
  }
  throw std::invalid_argument("initialize: unknown init_kind "
                              + std::to_string(static_cast<int>(kind)));
}

} // namespace troupe
