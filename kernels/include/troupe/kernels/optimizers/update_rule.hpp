// The optimizers a parameter shard applies, behind one call per key. A rule is a kind and its
// hyper-parameters (a plain value the job carries to every shard); a key's state is the
// tensors its rule keeps, each shaped like the weights, and the count of updates applied to it,
// which Adam's bias correction needs. Each shard owns the state of its own keys, so a key that
// is a slice of a parameter has a state of that slice's shape and a count of its own.
//
// Every formula follows torch.optim's so results compare one to one (docs/dsl.md writes them
// out): SGD is sgd.hpp's, unchanged; the others have a file pair each beside this one.
//
// Thread-safety: plain values and functions; an update writes only the tensors it is given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <troupe/kernels/sgd.hpp>
#include <troupe/kernels/tensor.hpp>

namespace troupe {

enum class optimizer_kind : std::uint8_t { sgd, adam, adamw, rmsprop, adagrad, lamb, lars };

/// An optimizer and its hyper-parameters besides the learning rate (a schedule's).
struct update_rule {
  optimizer_kind kind = optimizer_kind::sgd;
  sgd_options sgd;      ///< sgd: all of it; every rule: weight_decay; rmsprop, lars: momentum
  float beta1 = 0.9f;   ///< adam, adamw, lamb: first-moment decay
  float beta2 = 0.999f; ///< adam, adamw, lamb: second-moment decay
  float eps = 1e-8f;    ///< every rule but sgd: added to the denominator
  float alpha = 0.99f;  ///< rmsprop: square-average decay
  float trust = 0.001f; ///< lars: the trust coefficient (eta) of the layer-wise rate
};

/// Fields in declaration order, for CAF's serializers and graph's value_hash (no CAF here).
template <class Inspector> typename Inspector::result_type inspect(Inspector& f, update_rule& x) {
  return f(x.kind, x.sgd, x.beta1, x.beta2, x.eps, x.alpha, x.trust);
}

/// One key's optimizer state.
struct optimizer_state {
  std::vector<tensor> tensors; ///< in optimizer_state_names order, each the weights' shape
  std::int64_t steps = 0;      ///< updates applied to this key (Adam's t after its update)
};

/// "sgd", "adam", "adamw", "rmsprop", "adagrad", "lamb", "lars": the config's and
/// checkpoints' names.
const char* optimizer_name(optimizer_kind kind);
/// The kind named `name`; nullopt for a name no optimizer has.
std::optional<optimizer_kind> optimizer_of_name(const std::string& name);
/// Every optimizer's name, in optimizer_kind order.
std::vector<std::string> optimizer_names();

/// The names of the state tensors `kind` keeps, in order: sgd momentum (its velocity, the name
/// checkpoints have always used); adam, adamw and lamb exp_avg and exp_avg_sq; rmsprop
/// square_avg and momentum_buffer; adagrad sum; lars momentum_buffer.
const std::vector<std::string>& optimizer_state_names(optimizer_kind kind);

/// Zero state for weights of `shape` (steps 0).
optimizer_state initial_optimizer_state(optimizer_kind kind, const shape_t& shape);

/// One update of `weights` by `grad` into `out` (which may be `weights` itself, or another
/// buffer of the same shape), advancing `state`. `apply_weight_decay` false exempts this key
/// (biases, batch-norm scale and shift). SGD runs sgd_update as it always has (CPU or GPU);
/// the other rules run on the CPU only, in one serial pass on the caller's thread (a shard's
/// scheduler thread, where an OpenMP team would cost the computes more than it saves).
/// Throws std::invalid_argument for shapes unlike the weights', a state that is not `rule`'s,
/// or tensors on a GPU for a rule other than SGD.
void optimizer_update(const update_rule& rule, float lr, const tensor& weights, const tensor& grad,
                      optimizer_state& state, tensor& out, bool apply_weight_decay = true);

} // namespace troupe
