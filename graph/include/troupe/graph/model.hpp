// A model is a DAG of named layers with one input (the image batch) and one output (logits).
//
// Nodes are added in topological order (an input must exist before it is used), which makes
// the forward order the insertion order and the backward order its reverse. A node whose output
// feeds several nodes (ResNet shortcuts, Inception branches) gets the sum of their gradients.
//
// Parameters are listed in a fixed order (node order, then the layer's own order) with unique
// names; `parameter_index` maps a name to its slot. That order is what the compute and
// parameter-shard actors agree on.
//
// A model runs on the CPU until `to_device` moves it to a GPU; from then on its parameters,
// buffers, activations and gradients live in that GPU's memory and every step runs there.
//
// Thread-safety: a model replica is used by one actor at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <troupe/graph/layer.hpp>
#include <troupe/kernels/compute_device.hpp>
#include <troupe/kernels/softmax_cross_entropy.hpp>

namespace troupe {

class device_runtime; // graph/device_runtime.hpp: how a model reaches a GPU (private)

class model {
public:
  using node_id = std::size_t;
  /// The id of the model input (the image batch) in `add` input lists.
  static constexpr node_id input = static_cast<node_id>(-1);

  /// sample_shape is one example's shape, e.g. {1, 28, 28}; classes is the number of logits.
  model(std::string name, shape_t sample_shape, int classes);
  ~model();
  model(const model&) = delete;
  model& operator=(const model&) = delete;

  /// Adds a layer fed by `inputs` (earlier node ids or `model::input`). Builds it at once, so
  /// a shape mismatch throws here naming the layer. Names must be unique.
  node_id add(std::string name, std::unique_ptr<layer> l, std::vector<node_id> inputs);
  /// Declares the last node the output, checks it yields [N, classes], and initializes every
  /// parameter from `seed` (each parameter draws from seed and its name, so adding a layer does
  /// not change the others' values).
  void finalize(std::uint64_t seed);

  const std::string& name() const { return name_; }
  const shape_t& sample_shape() const { return sample_shape_; }
  int classes() const { return classes_; }

  /// Parameter gradients are allocated by the first train_step (empty before).
  std::vector<parameter*>& parameters() { return parameters_; }
  std::vector<buffer*>& buffers() { return buffers_; }
  /// Slot of a parameter by name; throws std::out_of_range naming it.
  std::size_t parameter_index(const std::string& name) const;
  /// The random streams that have advanced (dropout layers after training forwards), as
  /// (node name, position), in node order. Throws std::logic_error on a GPU (the GPU twins
  /// keep their own counters).
  std::vector<std::pair<std::string, std::uint64_t>> stream_positions() const;
  /// Puts every layer's stream where `positions` says, and the streams it does not name at 0.
  /// Throws std::invalid_argument naming a node the model lacks or a layer without a stream
  /// (nothing is changed then), std::logic_error on a GPU.
  void seek_streams(const std::vector<std::pair<std::string, std::uint64_t>>& positions);
  /// Total number of trainable scalars.
  std::int64_t parameter_count() const;
  /// What one sample's forward costs a GPU, per parameter slot: each layer is priced at the
  /// larger of its arithmetic (2 flops per multiply-add; a layer with a weight of rank >= 2
  /// does weight elements x output positions of them) and its memory traffic (its inputs and
  /// output, 4 bytes an element, at 16 flops per byte: a current GPU's arithmetic over its
  /// memory bandwidth, e.g. 15.7 TFLOP/s over 900 GB/s). A layer without parameters (ReLU,
  /// pooling, additions) is charged to the slot of the last layer with parameters before it
  /// (the first slot for layers before any): it runs on without waiting for weights. The
  /// compute stand-in spreads its forward and backward over the push groups by these shares.
  std::vector<double> forward_work_by_slot() const;

  /// Moves the finalized model to `device`: parameters and buffers are copied into its memory
  /// (parameter gradients are dropped, and reallocated there by the next train_step), and every
  /// later forward / train_step / evaluate runs there. Inputs given on the host are uploaded at
  /// the start of a step; results (logits, `grad`s) stay on the device: read them with
  /// tensor::to_host. Each call returns once the device has finished its work, and
  /// `on_gradient_ready(slot)` is called once that gradient is in device memory. Moving to the
  /// device the model is on does nothing; moving a model off a GPU throws std::logic_error
  /// (not supported yet). Throws std::runtime_error in a build without CUDA or when the GPU
  /// cannot be used, std::invalid_argument for a layer with no GPU implementation.
  void to_device(const compute_device& device);
  /// Where the model runs: the CPU unless `to_device` moved it.
  compute_device device() const;

  /// Logits [N, classes] for x [N, sample_shape...]. The reference stays valid until the next
  /// forward call.
  const tensor& forward(const tensor& x, bool training);

  /// One training step's math: forward, softmax cross-entropy, backward. Every parameter's
  /// `grad` holds d(mean loss)/d(param) afterwards. `on_gradient_ready(slot)` (optional) is
  /// called as soon as a parameter's gradient is final, in backward order, so a caller can ship
  /// it while the rest of backward runs. `on_backward` (optional) is called once forward and
  /// the loss are done, as backward starts (where a timeline splits the step).
  loss_result train_step(const tensor& x, const std::vector<std::int32_t>& labels,
                         const std::function<void(std::size_t)>& on_gradient_ready = {},
                         const std::function<void()>& on_backward = {});

  /// Forward in inference mode and the loss / accuracy, without gradients.
  loss_result evaluate(const tensor& x, const std::vector<std::int32_t>& labels);

  /// From now on train_step and evaluate also count loss_result::top_k_correct, the rows whose
  /// label ranks among the k largest logits (ties: softmax_cross_entropy.hpp); 0 stops it.
  /// Throws std::invalid_argument unless 0 <= k <= classes().
  void set_top_k(int k);
  int top_k() const { return top_k_; }

  /// One line per node: name, kind, output shape, parameter count.
  std::string summary() const;

private:
  struct node;
  /// Forward through every node, reusing output tensors that no one outside the model holds.
  const tensor& run_forward(const tensor& x, bool training);
  /// Backward from dlogits_ through every node in reverse, summing fan-out gradients.
  void run_backward(const tensor& x, const std::function<void(std::size_t)>& on_gradient_ready);
  /// Decides, per input edge, whether backward writes the source's gradient directly or into a
  /// scratch tensor that is then accumulated; checks every node feeds the output.
  void plan_backward();
  /// Drops outputs that are views of other tensors (flatten), so the viewed storage is unique
  /// again and can be reused, and the caller's batch is not held past the call.
  void release_views(bool keep_output);
  void require_finalized(const char* operation) const;
  /// x itself on the CPU; on a GPU, x uploaded into device_input_.
  const tensor& stage_input(const tensor& x);
  /// On a GPU: waits for the step's work and lets go of a batch the caller passed on the GPU.
  void finish_step(const tensor& x);
  /// Makes `t` a tensor of `shape` on the model's device that only this model sees.
  void ensure_private(tensor& t, const shape_t& shape);
  /// The loss of the last forward's logits; dlogits_ too when `with_gradient`.
  loss_result compute_loss(const std::vector<std::int32_t>& labels, bool with_gradient);

  std::string name_;
  shape_t sample_shape_;
  int classes_;
  int top_k_ = 0;
  std::vector<std::unique_ptr<node>> nodes_;
  std::vector<parameter*> parameters_;
  std::vector<buffer*> buffers_;
  tensor probabilities_;
  tensor dlogits_;
  tensor device_input_; ///< the uploaded batch, on a GPU
  bool finalized_ = false;
  /// Null on the CPU. Declared after nodes_: it refers to their layers, so it goes first.
  std::unique_ptr<device_runtime> runtime_;
};

} // namespace troupe
