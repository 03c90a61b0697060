// The SGD update of troupe/kernels/sgd.hpp on tensors in GPU memory, behind the public
// sgd_update: kernels/cuda/device_sgd.cpp runs the CUDA op on a stream of the calling
// thread's own and waits for it (sgd_update returns with the weights updated, as on the CPU);
// a build without CUDA has kernels/cpu/device_sgd_none.cpp, which throws naming the missing
// build. A replica's step and this update are then ordered by that wait, at the cost of one
// synchronization per call: a shard keeping many keys on a GPU wants a fused multi-tensor
// update instead (not built yet).
//
// Private to kernels/.
#pragma once

#include <troupe/kernels/sgd.hpp>

namespace troupe::device_sgd {

/// sgd_update for four tensors of the same shape on the same GPU (checked by the caller).
void update(const sgd_options& options, float lr, const tensor& weights, const tensor& grad,
            tensor& velocity, tensor& out, bool apply_weight_decay);

} // namespace troupe::device_sgd
