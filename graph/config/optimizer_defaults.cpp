// Each optimizer's defaults for the keys the optimizer statement shares (lr, wd, momentum,
// eps): PyTorch's for the optimizers it has, so `optimizer adam` with nothing else is
// torch.optim.Adam's defaults; SGD keeps the values it always had. A value the config or a
// flag gave is never replaced.
#include <troupe/graph/config/job_config.hpp>

namespace troupe {

namespace {

struct optimizer_defaults {
  const char* name;
  double lr; ///< 0: the network's (sgd)
  double wd;
  double momentum;
  double eps;
};

constexpr optimizer_defaults table[] = {
  {"sgd", 0, 1e-4, 0.9, 1e-8},   {"adam", 1e-3, 0, 0.9, 1e-8},     {"adamw", 1e-3, 1e-2, 0.9, 1e-8},
  {"rmsprop", 1e-2, 0, 0, 1e-8}, {"adagrad", 1e-2, 0, 0.9, 1e-10}, {"lamb", 1e-3, 1e-2, 0.9, 1e-6},
  {"lars", 1, 1e-4, 0.9, 1e-8},
};

const optimizer_defaults& defaults_of(const std::string& name) {
  for (const auto& d : table)
    if (name == d.name)
      return d;
  return table[0]; // the parser names only optimizers the table has
}

} // namespace

double optimizer_default_lr(const std::string& optimizer) {
  return defaults_of(optimizer).lr;
}

void resolve_optimizer_defaults(job_config& c) {
  auto& o = c.optimizer;
  const auto& d = defaults_of(o.name.value);
  if (!o.wd.given)
    o.wd.value = d.wd;
  if (!o.momentum.given)
    o.momentum.value = d.momentum;
  if (!o.eps.given)
    o.eps.value = d.eps;
}

} // namespace troupe
