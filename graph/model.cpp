// The model DAG: building (shape inference at `add`), seeded initialization, and the forward /
// backward sweeps of a training step.
//
// Memory follows one rule: after the first step of a given batch size, a step allocates
// nothing. Node outputs, node gradients, scratch gradients of fan-out edges and parameter
// gradients all persist and are overwritten in place, except that a tensor whose storage is
// also held outside the model (a logits handle kept by the caller, a gradient the compute actor
// sent to an aggregator, running statistics being checkpointed) is replaced by a fresh one
// instead of being written: readers elsewhere never see it change under them.
//
// Gradient summation: for each node output, the consumer that runs first in backward (the last
// one in forward order) writes the gradient buffer directly; every other consumer writes into
// its own scratch tensor, which is then added on with `accumulate`. That is decided once, in
// `plan_backward`, so the step itself has no bookkeeping.
//
// On a GPU (after `to_device`) the sweeps are the same code: tensors are allocated through the
// device runtime and each layer call, the loss and the accumulation go to it instead of the CPU
// ops (graph/device_runtime.hpp). A step ends by waiting for the device, so a caller never sees
// a result still being written.
#include <troupe/graph/model.hpp>

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include <troupe/graph/value_hash.hpp>
#include <troupe/kernels/elementwise.hpp>

#include "graph/device_runtime.hpp"

namespace troupe {

namespace {

/// The model's input as `build` sees it: a batch of one sample.
shape_t batch_of_one(const shape_t& sample_shape) {
  shape_t shape{1};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  return shape;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// One seed per name: the same (seed, name) always gives the same stream, and the streams of
/// different names are unrelated, so adding a layer leaves the others' values alone.
std::uint64_t named_seed(std::uint64_t seed, const std::string& name) {
  return splitmix64(splitmix64(seed) ^ fnv1a_64(name));
}

shape_t with_batch(shape_t shape, std::int64_t batch) {
  shape[0] = batch;
  return shape;
}

/// "[N, 32, 28, 28]": a built shape shown for any batch size.
std::string batch_shape_string(const shape_t& shape) {
  std::string text = shape_string(shape);
  auto comma = text.find(',');
  return "[N" + (comma == std::string::npos ? std::string("]") : text.substr(comma));
}

/// Makes `t` a CPU tensor of `shape` that only this model sees, keeping its storage when it can.
void ensure_private_on_host(tensor& t, const shape_t& shape) {
  if (t.shape() != shape || !t.unique())
    t = tensor::uninitialized(shape);
}

} // namespace

struct model::node {
  std::string name;
  std::unique_ptr<layer> op;
  std::vector<node_id> inputs;
  shape_t output_shape;            ///< as built, with a batch of 1
  std::size_t first_parameter = 0; ///< slot of the layer's first parameter
  std::int64_t parameter_count = 0;
  tensor output;                  ///< of the last forward
  bool output_is_view = false;    ///< the layer rebinds `output` to a view of an input
  tensor grad;                    ///< d(loss)/d(output), summed over consumers
  std::vector<bool> writes_grad;  ///< per input edge: backward writes the source's grad
  std::vector<tensor> edge_grads; ///< per input edge otherwise: scratch to accumulate
  // Argument vectors for the layer calls, kept so a step does not allocate them.
  std::vector<const tensor*> input_ptrs;
  std::vector<tensor*> dinput_ptrs;
};

model::model(std::string name, shape_t sample_shape, int classes)
    : name_(std::move(name)), sample_shape_(std::move(sample_shape)), classes_(classes) {
  bool positive = !sample_shape_.empty();
  for (auto d : sample_shape_)
    positive = positive && d > 0;
  if (!positive || classes_ < 1)
    throw std::invalid_argument("model '" + name_ + "': sample shape " + shape_string(sample_shape_)
                                + " and classes " + std::to_string(classes_) + " must be positive");
}

model::~model() = default;

model::node_id model::add(std::string name, std::unique_ptr<layer> l, std::vector<node_id> inputs) {
  const std::string where = "model '" + name_ + "': layer '" + name + "'";
  if (finalized_)
    throw std::logic_error(where + " added after finalize");
  if (!l || name.empty() || inputs.empty())
    throw std::invalid_argument(where + " needs a name, a layer and at least one input");
  for (const auto& n : nodes_)
    if (n->name == name)
      throw std::invalid_argument(where + ": the name is already used");

  std::vector<shape_t> input_shapes;
  for (node_id id : inputs) {
    if (id == input)
      input_shapes.push_back(batch_of_one(sample_shape_));
    else if (id < nodes_.size())
      input_shapes.push_back(nodes_[id]->output_shape);
    else
      throw std::invalid_argument(where + ": input node " + std::to_string(id)
                                  + " does not exist (add nodes in topological order)");
  }
  shape_t output_shape = l->build(name, input_shapes);
  if (output_shape.empty() || output_shape[0] != 1)
    throw std::logic_error(where + " built output " + shape_string(output_shape)
                           + ", which does not keep the batch axis");
  for (const auto& p : l->parameters())
    for (const parameter* existing : parameters_)
      if (existing->name == p.name)
        throw std::invalid_argument(where + ": parameter name '" + p.name + "' is already used");

  auto n = std::make_unique<node>();
  n->name = std::move(name);
  n->inputs = std::move(inputs);
  n->output_shape = std::move(output_shape);
  n->first_parameter = parameters_.size();
  for (auto& p : l->parameters()) {
    parameters_.push_back(&p);
    n->parameter_count += p.value.numel();
  }
  for (auto& b : l->buffers())
    buffers_.push_back(&b);
  n->writes_grad.assign(n->inputs.size(), true);
  n->edge_grads.resize(n->inputs.size());
  n->input_ptrs.resize(n->inputs.size());
  n->dinput_ptrs.resize(n->inputs.size());
  n->op = std::move(l);
  nodes_.push_back(std::move(n));
  return nodes_.size() - 1;
}

void model::finalize(std::uint64_t seed) {
  if (nodes_.empty())
    throw std::invalid_argument("model '" + name_ + "' has no layers");
  const node& out = *nodes_.back();
  if (out.output_shape.size() != 2 || out.output_shape[1] != classes_)
    throw std::invalid_argument("model '" + name_ + "': output layer '" + out.name + "' yields "
                                + batch_shape_string(out.output_shape) + ", expected [N, "
                                + std::to_string(classes_) + "]");
  plan_backward();
  for (auto& n : nodes_)
    n->op->set_seed(named_seed(seed, n->name));
  for (parameter* p : parameters_)
    initialize(p->value, p->init, named_seed(seed, p->name));
  finalized_ = true;
}

void model::plan_backward() {
  // Backward visits nodes in reverse; the first visit of an edge into a source writes its
  // gradient, later ones accumulate.
  std::vector<bool> written(nodes_.size(), false);
  for (std::size_t j = nodes_.size(); j-- > 0;) {
    node& n = *nodes_[j];
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] == input)
        continue;
      n.writes_grad[k] = !written[n.inputs[k]];
      written[n.inputs[k]] = true;
    }
  }
  for (std::size_t j = 0; j + 1 < nodes_.size(); ++j)
    if (!written[j])
      throw std::invalid_argument("model '" + name_ + "': layer '" + nodes_[j]->name
                                  + "' does not feed the output layer '" + nodes_.back()->name
                                  + "'");
}

const tensor& model::forward(const tensor& x, bool training) {
  const tensor& logits = run_forward(stage_input(x), training);
  release_views(true);
  finish_step(x);
  return logits;
}

const tensor& model::run_forward(const tensor& x, bool training) {
  require_finalized("forward");
  shape_t tail(x.shape().begin() + (x.rank() > 0 ? 1 : 0), x.shape().end());
  if (x.rank() != sample_shape_.size() + 1 || tail != sample_shape_ || x.dim(0) < 1)
    throw std::invalid_argument("model '" + name_ + "': input " + shape_string(x.shape())
                                + " does not match [N, " + shape_string(sample_shape_).substr(1));
  release_views(false);
  const std::int64_t batch = x.dim(0);
  for (std::size_t j = 0; j < nodes_.size(); ++j) {
    node& n = *nodes_[j];
    for (std::size_t k = 0; k < n.inputs.size(); ++k)
      n.input_ptrs[k] = n.inputs[k] == input ? &x : &nodes_[n.inputs[k]]->output;
    shape_t expected = with_batch(n.output_shape, batch);
    if (!n.output_is_view)
      ensure_private(n.output, expected);
    if (training) // training forward updates buffers (running statistics) in place
      for (auto& b : n.op->buffers())
        if (!b.value.unique())
          b.value = b.value.clone();
    if (runtime_)
      runtime_->forward(j, n.input_ptrs, n.output, training);
    else
      n.op->forward(n.input_ptrs, n.output, training);
    for (const tensor* in : n.input_ptrs)
      n.output_is_view = n.output_is_view || n.output.shares_storage_with(*in);
    if (n.output.shape() != expected)
      throw std::logic_error("model '" + name_ + "': layer '" + n.name + "' produced "
                             + shape_string(n.output.shape()) + ", built for "
                             + shape_string(expected));
  }
  return nodes_.back()->output;
}

void model::release_views(bool keep_output) {
  for (std::size_t j = 0; j < nodes_.size(); ++j)
    if (nodes_[j]->output_is_view && !(keep_output && j + 1 == nodes_.size()))
      nodes_[j]->output = tensor();
}

void model::run_backward(const tensor& x,
                         const std::function<void(std::size_t)>& on_gradient_ready) {
  for (std::size_t j = nodes_.size(); j-- > 0;) {
    node& n = *nodes_[j];
    const tensor& doutput = j + 1 == nodes_.size() ? dlogits_ : n.grad;
    bool needed = !n.op->parameters().empty();
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      const node_id source = n.inputs[k];
      n.input_ptrs[k] = source == input ? &x : &nodes_[source]->output;
      if (source == input) {
        n.dinput_ptrs[k] = nullptr; // nobody needs d(loss)/d(images)
        continue;
      }
      tensor& destination = n.writes_grad[k] ? nodes_[source]->grad : n.edge_grads[k];
      ensure_private(destination, nodes_[source]->output.shape());
      n.dinput_ptrs[k] = &destination;
      needed = true;
    }
    for (auto& p : n.op->parameters())
      ensure_private(p.grad, p.value.shape());
    if (needed && runtime_)
      runtime_->backward(j, n.input_ptrs, n.output, doutput, n.dinput_ptrs);
    else if (needed)
      n.op->backward(n.input_ptrs, n.output, doutput, n.dinput_ptrs);
    for (std::size_t k = 0; k < n.inputs.size(); ++k)
      if (n.inputs[k] != input && !n.writes_grad[k]) {
        if (runtime_)
          runtime_->accumulate(n.edge_grads[k], nodes_[n.inputs[k]]->grad);
        else
          accumulate(n.edge_grads[k], nodes_[n.inputs[k]]->grad);
      }
    if (on_gradient_ready && runtime_ && !n.op->parameters().empty())
      runtime_->synchronize(); // the caller may read the gradients at once
    if (on_gradient_ready)
      for (std::size_t i = n.op->parameters().size(); i-- > 0;)
        on_gradient_ready(n.first_parameter + i);
  }
}

loss_result model::train_step(const tensor& x, const std::vector<std::int32_t>& labels,
                              const std::function<void(std::size_t)>& on_gradient_ready,
                              const std::function<void()>& on_backward) {
  const tensor& staged = stage_input(x);
  run_forward(staged, true);
  loss_result result = compute_loss(labels, true);
  if (on_backward)
    on_backward();
  run_backward(staged, on_gradient_ready);
  release_views(false);
  finish_step(x);
  return result;
}

loss_result model::evaluate(const tensor& x, const std::vector<std::int32_t>& labels) {
  run_forward(stage_input(x), false);
  loss_result result = compute_loss(labels, false);
  release_views(false);
  finish_step(x);
  return result;
}

void model::set_top_k(int k) {
  if (k < 0 || k > classes_)
    throw std::invalid_argument("model '" + name_ + "': top-k " + std::to_string(k)
                                + " is outside [0, " + std::to_string(classes_) + "] (0: off)");
  top_k_ = k;
}

loss_result model::compute_loss(const std::vector<std::int32_t>& labels, bool with_gradient) {
  const tensor& logits = nodes_.back()->output;
  if (static_cast<std::int64_t>(labels.size()) != logits.dim(0))
    throw std::invalid_argument("model '" + name_ + "': " + std::to_string(labels.size())
                                + " labels for a batch of " + std::to_string(logits.dim(0)));
  ensure_private(probabilities_, logits.shape());
  if (with_gradient)
    ensure_private(dlogits_, logits.shape());
  if (runtime_)
    return runtime_->loss(logits, labels, probabilities_, with_gradient ? &dlogits_ : nullptr,
                          top_k_);
  loss_result result = softmax_cross_entropy_forward(logits, labels, probabilities_, top_k_);
  if (with_gradient)
    softmax_cross_entropy_backward(probabilities_, labels, dlogits_);
  return result;
}

const tensor& model::stage_input(const tensor& x) {
  if (!runtime_)
    return x;
  for (const parameter* p : parameters_)
    if (p->value.device() != device_kind::cuda || p->value.device_index() != device().index)
      throw std::logic_error("model '" + name_ + "' on " + to_string(device()) + ": parameter '"
                             + p->name + "' was replaced by a tensor on another device");
  runtime_->upload(x, device_input_);
  return device_input_;
}

void model::finish_step(const tensor& x) {
  if (!runtime_)
    return;
  runtime_->synchronize();
  if (device_input_.shares_storage_with(x))
    device_input_ = tensor(); // the caller's own device batch: not held past the call
}

void model::ensure_private(tensor& t, const shape_t& shape) {
  if (!runtime_) {
    ensure_private_on_host(t, shape);
    return;
  }
  const compute_device here = runtime_->device();
  if (t.shape() != shape || !t.unique() || t.device() != here.kind
      || t.device_index() != here.index)
    t = runtime_->allocate(shape);
}

void model::to_device(const compute_device& device) {
  require_finalized("to_device");
  if (device == this->device())
    return;
  if (runtime_ || device.kind == device_kind::cpu)
    throw std::logic_error("model '" + name_ + "': moving from " + to_string(this->device())
                           + " to " + to_string(device) + " is not supported yet");
  std::vector<std::pair<std::string, layer*>> layers;
  for (auto& n : nodes_)
    layers.emplace_back(n->name, n->op.get());
  auto runtime = make_device_runtime(device, name_, layers); // first: it throws without CUDA
  // Copy everything before changing anything, so a failed copy leaves the model on the CPU.
  std::vector<tensor> values, buffer_values;
  for (const parameter* p : parameters_)
    values.push_back(p->value.to_gpu(device.index));
  for (const buffer* b : buffers_)
    buffer_values.push_back(b->value.to_gpu(device.index));
  for (std::size_t slot = 0; slot < parameters_.size(); ++slot) {
    parameters_[slot]->value = std::move(values[slot]);
    parameters_[slot]->grad = tensor();
  }
  for (std::size_t i = 0; i < buffers_.size(); ++i)
    buffers_[i]->value = std::move(buffer_values[i]);
  // Activations and gradients of CPU steps: reallocated on the device by the next step.
  for (auto& n : nodes_) {
    n->output = tensor();
    n->grad = tensor();
    for (auto& g : n->edge_grads)
      g = tensor();
  }
  probabilities_ = tensor();
  dlogits_ = tensor();
  runtime_ = std::move(runtime);
}

compute_device model::device() const {
  return runtime_ ? runtime_->device() : compute_device{};
}

std::size_t model::parameter_index(const std::string& name) const {
  for (std::size_t slot = 0; slot < parameters_.size(); ++slot)
    if (parameters_[slot]->name == name)
      return slot;
  throw std::out_of_range("model '" + name_ + "' has no parameter '" + name + "'");
}

std::vector<std::pair<std::string, std::uint64_t>> model::stream_positions() const {
  if (runtime_)
    throw std::logic_error("model '" + name_
                           + "': random-stream positions are not tracked on a GPU yet");
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const auto& n : nodes_)
    if (const auto position = n->op->stream_position(); position != 0)
      out.emplace_back(n->name, position);
  return out;
}

void model::seek_streams(const std::vector<std::pair<std::string, std::uint64_t>>& positions) {
  if (runtime_)
    throw std::logic_error("model '" + name_ + "': random streams cannot be moved on a GPU yet");
  std::vector<std::uint64_t> target(nodes_.size(), 0);
  for (const auto& [name, position] : positions) {
    std::size_t i = 0;
    while (i < nodes_.size() && nodes_[i]->name != name)
      ++i;
    if (i == nodes_.size())
      throw std::invalid_argument("model '" + name_ + "' has no layer '" + name + "' to seek");
    if (position != 0 && !nodes_[i]->op->has_random_stream())
      throw std::invalid_argument("model '" + name_ + "': layer '" + name + "' ("
                                  + nodes_[i]->op->kind() + ") has no random stream");
    target[i] = position;
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    nodes_[i]->op->seek_stream(target[i]);
}

std::int64_t model::parameter_count() const {
  std::int64_t count = 0;
  for (const auto& n : nodes_)
    count += n->parameter_count;
  return count;
}

std::vector<double> model::forward_work_by_slot() const {
  constexpr double flops_per_element = 16.0 * 4.0; // 16 flops per byte, 4-byte elements
  const shape_t input_shape = batch_of_one(sample_shape_);
  std::vector<double> work(parameters_.size(), 0.0);
  if (work.empty())
    return work;
  // Parameters are in node order, so the first layer with any holds slot 0: the layers before
  // it are charged there too.
  std::size_t current = 0;
  for (const auto& n : nodes_) {
    double traffic = static_cast<double>(shape_numel(n->output_shape));
    for (node_id id : n->inputs)
      traffic +=
        static_cast<double>(shape_numel(id == input ? input_shape : nodes_[id]->output_shape));
    double arithmetic = 0.0;
    for (const auto& p : n->op->parameters()) {
      const auto& weight = p.value;
      if (weight.rank() < 2 || n->output_shape.size() < 2 || n->output_shape[1] < 1)
        continue;
      const auto positions = shape_numel(n->output_shape) / n->output_shape[1];
      arithmetic = 2.0 * static_cast<double>(weight.numel()) * static_cast<double>(positions);
      break;
    }
    if (!n->op->parameters().empty())
      current = n->first_parameter;
    work[current] += std::max(arithmetic, flops_per_element * traffic);
  }
  return work;
}

std::string model::summary() const {
  std::ostringstream out;
  out << "model '" << name_ << "': input " << batch_shape_string(batch_of_one(sample_shape_))
      << ", " << classes_ << " classes\n";
  for (const auto& n : nodes_)
    out << "  " << std::left << std::setw(32) << n->name << ' ' << std::setw(16) << n->op->kind()
        << ' ' << std::setw(22) << batch_shape_string(n->output_shape) << ' ' << std::right
        << std::setw(12) << n->parameter_count << '\n';
  out << "  total parameters: " << parameter_count() << '\n';
  return out.str();
}

void model::require_finalized(const char* operation) const {
  if (!finalized_)
    throw std::logic_error(std::string("model '") + name_ + "': " + operation + " before finalize");
}

} // namespace troupe
