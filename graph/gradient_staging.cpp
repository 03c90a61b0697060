// See gradient_staging.hpp.
#include <troupe/graph/gradient_staging.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace troupe {

gradient_staging::gradient_staging(model& replica)
    : gradient_staging(replica.parameters(), replica.device().kind != device_kind::cpu) {}

gradient_staging::gradient_staging(std::vector<parameter*> params, bool staged)
    : params_(std::move(params)), staged_(staged) {
  if (staged_)
    host_.resize(params_.size());
}

void gradient_staging::gradient_ready(std::size_t slot) {
  if (!staged_ || slot >= host_.size())
    return;
  const auto& grad = params_[slot]->grad;
  auto& host = host_[slot];
  if (!host.unique() || host.shape() != grad.shape())
    host = tensor::uninitialized(grad.shape());
  host.copy_from(grad);
}

const tensor& gradient_staging::host_gradient(std::size_t slot) const {
  if (slot >= params_.size())
    throw std::out_of_range("gradient staging: slot " + std::to_string(slot) + " of "
                            + std::to_string(params_.size()) + " parameters");
  return staged_ ? host_[slot] : params_[slot]->grad;
}

} // namespace troupe
