// Where a replica's gradients are read on the host once backward has made them final. A replica
// on the host is read in place (a parameter's own `grad`). A replica on a GPU keeps its
// gradients in device memory, so each is copied once, as soon as it is final, into a host buffer
// of its slot (one device-to-host copy per parameter per step, synchronous, from pageable
// memory); what reads it (a push's views) reads that buffer. A buffer is reused while no one
// else holds it (the shard has summed the push of an earlier step), else replaced, so a copy
// never writes under a reader.
//
// Thread-safety: as `model` (one user at a time).
#pragma once

#include <cstddef>
#include <vector>

#include <troupe/graph/layer.hpp>
#include <troupe/graph/model.hpp>

namespace troupe {

class gradient_staging {
public:
  gradient_staging() = default;
  /// The gradients of `replica`: staged when it runs off the host (model::to_device), read in
  /// place otherwise. Keeps pointers to the replica's parameters, which must outlive it.
  explicit gradient_staging(model& replica);
  /// The gradients of `params`, staged (copied into host buffers) or read in place.
  gradient_staging(std::vector<parameter*> params, bool staged);

  /// The gradient of `slot` is final for this step: staged, it is copied to the slot's host
  /// buffer now. A slot past the parameters is ignored.
  void gradient_ready(std::size_t slot);
  /// The gradient of `slot` on the host: staged, the copy its last gradient_ready made (empty
  /// before one); else the parameter's own `grad`.
  const tensor& host_gradient(std::size_t slot) const;
  bool staged() const { return staged_; }

private:
  std::vector<parameter*> params_;
  std::vector<tensor> host_; ///< staged: one buffer per slot
  bool staged_ = false;
};

} // namespace troupe
