// Internal: argument checks shared by the ops, so every op words a shape error the same way
// ("conv2d: dy has shape [..], expected [..]") and the weighted ops check their backward
// arguments with one piece of code.
#pragma once

#include <stdexcept>
#include <string>

#include <troupe/kernels/tensor.hpp>

namespace troupe::cpu {

inline void require_shape(const char* op, const char* what, const shape_t& got,
                          const shape_t& want) {
  if (got != want)
    throw std::invalid_argument(std::string(op) + ": " + what + " has shape " + shape_string(got)
                                + ", expected " + shape_string(want));
}

/// Backward of an op with weights w [K, ...] and optional bias: dy must have the forward output
/// shape `out`, dw the shape of w, dx (when wanted) that of x, db (when wanted) [K].
inline void require_weighted_backward_shapes(const char* op, const tensor& x, const tensor& w,
                                             const shape_t& out, const tensor& dy, const tensor* dx,
                                             const tensor& dw, const tensor* db) {
  require_shape(op, "dy", dy.shape(), out);
  require_shape(op, "dw", dw.shape(), w.shape());
  if (dx != nullptr)
    require_shape(op, "dx", dx->shape(), x.shape());
  if (db != nullptr)
    require_shape(op, "db", db->shape(), {w.dim(0)});
}

} // namespace troupe::cpu
