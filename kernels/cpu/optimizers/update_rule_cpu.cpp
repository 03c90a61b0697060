// The one call a shard makes per key (update_rule.hpp): checks that the state is the rule's
// and shaped like the weights, counts the update, and runs the rule's own pass. SGD goes to
// sgd_update unchanged, so its results and its GPU path are what they were before the other
// rules existed.
#include <troupe/kernels/optimizers/update_rule.hpp>

#include <stdexcept>

#include <troupe/kernels/optimizers/adagrad.hpp>
#include <troupe/kernels/optimizers/adam.hpp>
#include <troupe/kernels/optimizers/adamw.hpp>
#include <troupe/kernels/optimizers/lamb.hpp>
#include <troupe/kernels/optimizers/lars.hpp>
#include <troupe/kernels/optimizers/rmsprop.hpp>

namespace troupe {

namespace {

const std::vector<std::string> names{"sgd", "adam", "adamw", "rmsprop", "adagrad", "lamb", "lars"};

void require_like(const char* what, const tensor& t, const tensor& weights) {
  if (t.shape() != weights.shape())
    throw std::invalid_argument(std::string("optimizer_update: ") + what + " "
                                + shape_string(t.shape()) + " and weights "
                                + shape_string(weights.shape()) + " must have the same shape");
  if (t.device() != device_kind::cpu)
    throw std::invalid_argument(std::string("optimizer_update: ") + what
                                + " is on a GPU; only sgd updates weights there");
}

} // namespace

const char* optimizer_name(optimizer_kind kind) {
  return names.at(static_cast<std::size_t>(kind)).c_str();
}

std::optional<optimizer_kind> optimizer_of_name(const std::string& name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return static_cast<optimizer_kind>(i);
  return std::nullopt;
}

std::vector<std::string> optimizer_names() {
  return names;
}

const std::vector<std::string>& optimizer_state_names(optimizer_kind kind) {
  static const std::vector<std::string> sgd{"momentum"};
  static const std::vector<std::string> moments{"exp_avg", "exp_avg_sq"};
  static const std::vector<std::string> rmsprop{"square_avg", "momentum_buffer"};
  static const std::vector<std::string> adagrad{"sum"};
  static const std::vector<std::string> lars{"momentum_buffer"};
  switch (kind) {
  case optimizer_kind::sgd:
    return sgd;
  case optimizer_kind::rmsprop:
    return rmsprop;
  case optimizer_kind::adagrad:
    return adagrad;
  case optimizer_kind::lars:
    return lars;
  case optimizer_kind::adam:
  case optimizer_kind::adamw:
  case optimizer_kind::lamb:
    break;
  }
  return moments;
}

optimizer_state initial_optimizer_state(optimizer_kind kind, const shape_t& shape) {
  optimizer_state out;
  for (std::size_t i = 0; i < optimizer_state_names(kind).size(); ++i)
    out.tensors.emplace_back(shape);
  return out;
}

void optimizer_update(const update_rule& rule, float lr, const tensor& weights, const tensor& grad,
                      optimizer_state& state, tensor& out, bool apply_weight_decay) {
  const auto& wanted = optimizer_state_names(rule.kind);
  if (state.tensors.size() != wanted.size())
    throw std::invalid_argument("optimizer_update: " + std::string(optimizer_name(rule.kind))
                                + " keeps " + std::to_string(wanted.size())
                                + " state tensors, the state holds "
                                + std::to_string(state.tensors.size()));
  auto& s = state.tensors;
  if (rule.kind == optimizer_kind::sgd) {
    sgd_update(rule.sgd, lr, weights, grad, s[0], out, apply_weight_decay);
    ++state.steps;
    return;
  }
  require_like("weights", weights, weights);
  require_like("grad", grad, weights);
  require_like("out", out, weights);
  for (std::size_t i = 0; i < s.size(); ++i)
    require_like(wanted[i].c_str(), s[i], weights);
  const float wd = apply_weight_decay ? rule.sgd.weight_decay : 0.0f;
  const std::int64_t t = state.steps + 1;
  switch (rule.kind) {
  case optimizer_kind::adam:
    adam_update(rule, lr, wd, weights, grad, s[0], s[1], t, out);
    break;
  case optimizer_kind::adamw:
    adamw_update(rule, lr, wd, weights, grad, s[0], s[1], t, out);
    break;
  case optimizer_kind::lamb:
    lamb_update(rule, lr, wd, weights, grad, s[0], s[1], t, out);
    break;
  case optimizer_kind::rmsprop:
    rmsprop_update(rule, lr, wd, weights, grad, s[0], s[1], out);
    break;
  case optimizer_kind::adagrad:
    adagrad_update(rule, lr, wd, weights, grad, s[0], out);
    break;
  case optimizer_kind::lars:
    lars_update(rule, lr, wd, weights, grad, s[0], out);
    break;
  case optimizer_kind::sgd:
    break;
  }
  state.steps = t;
}

} // namespace troupe
