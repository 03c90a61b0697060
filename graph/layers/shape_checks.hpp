// Argument checks shared by every layer's `build`, so a bad shape always reads the same way:
// "layer 'conv2' (conv2d): <what is wrong>". Kernel ops report shape errors without knowing the
// layer; `checked_shape` re-throws them with the layer's name in front. Header-only: these are
// a handful of one-line helpers with no state.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

/// The exception every layer throws for a shape or configuration mismatch.
inline std::invalid_argument layer_error(const std::string& name, const std::string& kind,
                                         const std::string& what) {
  return std::invalid_argument("layer '" + name + "' (" + kind + "): " + what);
}

inline void require_input_count(const std::string& name, const std::string& kind,
                                const std::vector<shape_t>& inputs, std::size_t count) {
  if (inputs.size() != count)
    throw layer_error(name, kind,
                      "expects " + std::to_string(count) + " input(s), got "
                        + std::to_string(inputs.size()));
}

/// Accepts any rank listed in `ranks` (e.g. {2, 4} for batch norm over NC or NCHW).
inline void require_rank(const std::string& name, const std::string& kind, const shape_t& shape,
                         std::initializer_list<std::size_t> ranks) {
  for (auto rank : ranks)
    if (shape.size() == rank)
      return;
  std::string allowed;
  for (auto rank : ranks)
    allowed += (allowed.empty() ? "" : " or ") + std::to_string(rank);
  throw layer_error(name, kind,
                    "expects an input of rank " + allowed + ", got " + shape_string(shape));
}

/// Runs a kernel's output-shape computation and names the layer if it rejects the shapes.
template <class Compute>
shape_t checked_shape(const std::string& name, const std::string& kind, Compute&& compute) {
  try {
    return compute();
  } catch (const std::invalid_argument& e) {
    throw layer_error(name, kind, e.what());
  }
}

} // namespace troupe
