// SGD with momentum in PyTorch's formulation (see sgd.hpp), as one fused pass over w, g and v:
// three streams in, two out, so the loop is memory-bound and splits into large contiguous
// chunks when the tensor is big enough to pay for a parallel dispatch.
#include <troupe/kernels/sgd.hpp>

#include <stdexcept>
#include <string>

#include "kernels/cpu/parallel.hpp"
#include "kernels/device_sgd.hpp"

namespace troupe {

namespace {

void require_like(const char* name, const tensor& t, const tensor& weights) {
  if (t.shape() != weights.shape())
    throw std::invalid_argument(std::string("sgd_update: ") + name + " " + shape_string(t.shape())
                                + " and weights " + shape_string(weights.shape())
                                + " must have the same shape");
}

} // namespace

void sgd_update(const sgd_options& options, float lr, const tensor& weights, const tensor& grad,
                tensor& velocity, tensor& out, bool apply_weight_decay) {
  require_like("grad", grad, weights);
  require_like("velocity", velocity, weights);
  require_like("out", out, weights);
  if (weights.device() != device_kind::cpu || grad.device() != device_kind::cpu
      || velocity.device() != device_kind::cpu || out.device() != device_kind::cpu) {
    for (const tensor* t :
         {&grad, static_cast<const tensor*>(&velocity), static_cast<const tensor*>(&out)})
      if (t->device() != weights.device() || t->device_index() != weights.device_index())
        throw std::invalid_argument(
          "sgd_update: weights, grad, velocity and out must be on one device");
    return device_sgd::update(options, lr, weights, grad, velocity, out, apply_weight_decay);
  }
  const float* w = weights.data();
  const float* g = grad.data();
  float* v = velocity.data();
  float* o = out.data();
  const float wd = apply_weight_decay ? options.weight_decay : 0.0f;
  const float mu = options.momentum;
  const bool nesterov = options.nesterov;
  cpu::parallel_range(weights.numel(), cpu::elementwise_grain / 2,
                      [=](std::int64_t b, std::int64_t e) {
                        if (nesterov) {
                          for (std::int64_t i = b; i < e; ++i) {
                            float gi = g[i] + wd * w[i];
                            float vi = mu * v[i] + gi;
                            v[i] = vi;
                            o[i] = w[i] - lr * (gi + mu * vi);
                          }
                        } else {
                          for (std::int64_t i = b; i < e; ++i) {
                            float gi = g[i] + wd * w[i];
                            float vi = mu * v[i] + gi;
                            v[i] = vi;
                            o[i] = w[i] - lr * vi;
                          }
                        }
                      });
}

} // namespace troupe
