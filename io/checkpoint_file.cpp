// The checkpoint -> safetensors mapping (names and metadata keys in checkpoint_file.hpp); the
// way back is checkpoint_layout.cpp, the checksum checkpoint_codec.cpp. Writing one replaces
// a cluster checkpoint (manifest) of the same epoch, so an epoch has one kind only.
#include <troupe/io/checkpoint_file.hpp>

#include <cinttypes>
#include <cstdio>
#include <stdexcept>

#include "io/checkpoint_codec.hpp"
#include "io/checkpoint_layout.hpp"
#include "io/file_bytes.hpp"
#include <troupe/io/atomic_file.hpp>
#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

const std::string format_version = "1";

void check_consistent(const training_checkpoint& c) {
  if (c.state.size() != c.parameters.size())
    throw std::invalid_argument("checkpoint: optimizer state for " + std::to_string(c.state.size())
                                + " parameters, the checkpoint has "
                                + std::to_string(c.parameters.size()));
  const auto& names = optimizer_state_names(c.optimizer);
  for (std::size_t i = 0; i < c.parameters.size(); ++i) {
    if (c.state[i].tensors.size() != names.size())
      throw std::invalid_argument("checkpoint: " + c.parameters[i].name + " has "
                                  + std::to_string(c.state[i].tensors.size()) + " state tensors, "
                                  + optimizer_name(c.optimizer) + " keeps "
                                  + std::to_string(names.size()));
    for (std::size_t k = 0; k < names.size(); ++k)
      if (c.state[i].tensors[k].shape() != c.parameters[i].value.shape())
        throw std::invalid_argument("checkpoint: " + names[k] + " of " + c.parameters[i].name
                                    + " has shape " + shape_string(c.state[i].tensors[k].shape()));
  }
  if (c.replicas.empty())
    throw std::invalid_argument("checkpoint: no replica state (at least worker 0's)");
  for (const auto& r : c.replicas) {
    if (r.buffers.size() != c.replicas[0].buffers.size())
      throw std::invalid_argument("checkpoint: replicas hold different buffers");
    for (std::size_t b = 0; b < r.buffers.size(); ++b)
      if (r.buffers[b].name != c.replicas[0].buffers[b].name
          || r.buffers[b].value.shape() != c.replicas[0].buffers[b].value.shape())
        throw std::invalid_argument("checkpoint: replicas hold different buffers ("
                                    + r.buffers[b].name + ")");
  }
}

safetensors_content to_content(const training_checkpoint& c) {
  safetensors_content out;
  std::vector<std::string> parameter_names, buffer_names;
  for (const auto& p : c.parameters) {
    out.tensors.push_back(p);
    parameter_names.push_back(p.name);
  }
  for (const auto& b : c.replicas[0].buffers) {
    out.tensors.push_back(b);
    buffer_names.push_back(b.name);
  }
  const auto& state_names = optimizer_state_names(c.optimizer);
  std::vector<std::string> steps;
  for (std::size_t i = 0; i < c.parameters.size(); ++i) {
    for (std::size_t k = 0; k < state_names.size(); ++k)
      out.tensors.push_back({state_names[k] + "/" + c.parameters[i].name, c.state[i].tensors[k]});
    steps.push_back(std::to_string(c.state[i].steps));
  }
  for (std::size_t w = 1; w < c.replicas.size(); ++w)
    for (const auto& b : c.replicas[w].buffers)
      out.tensors.push_back({"worker" + std::to_string(w) + "/" + b.name, b.value});
  auto& m = out.metadata;
  m["format"] = "pt"; // what loaders of the format expect; the tensors are plain arrays
  m["troupe.format"] = format_version;
  m["troupe.epoch"] = std::to_string(c.epoch);
  m["troupe.network"] = c.network;
  m["troupe.steps_per_epoch"] = std::to_string(c.steps_per_epoch);
  m["troupe.parameters"] = join_lines(parameter_names);
  m["troupe.buffers"] = join_lines(buffer_names);
  m["troupe.workers"] = std::to_string(c.replicas.size());
  m["troupe.shards"] = std::to_string(c.shards.size());
  if (c.optimizer != optimizer_kind::sgd) {
    m["troupe.optimizer"] = optimizer_name(c.optimizer);
    m["troupe.optimizer_steps"] = join_lines(steps);
  }
  for (std::size_t r = 0; r < c.shards.size(); ++r)
    m["troupe.shard." + std::to_string(r)] = shard_text(c.shards[r]);
  for (std::size_t w = 0; w < c.replicas.size(); ++w)
    m["troupe.worker." + std::to_string(w) + ".streams"] = streams_text(c.replicas[w]);
  m[checkpoint_crc_key] = checkpoint_crc_placeholder;
  return out;
}

} // namespace

std::string checkpoint_path(const std::string& prefix, std::int64_t epoch) {
  if (prefix.empty())
    throw std::invalid_argument("checkpoint: empty model prefix");
  if (epoch < 0)
    throw std::invalid_argument("checkpoint: negative epoch " + std::to_string(epoch));
  char digits[24];
  std::snprintf(digits, sizeof digits, "%04" PRId64, epoch);
  return prefix + "-" + digits + ".safetensors";
}

void write_checkpoint(const std::string& path, const training_checkpoint& checkpoint) {
  check_consistent(checkpoint);
  // PREFIX-EEEE.safetensors displaces PREFIX-EEEE.manifest.json (checkpoint_parts.hpp).
  const std::string suffix = ".safetensors";
  const bool numbered = path.size() > suffix.size()
                        && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  const auto manifest =
    numbered ? path.substr(0, path.size() - suffix.size()) + ".manifest.json" : std::string();
  write_file_atomically(path, encode_checksummed(path, to_content(checkpoint)), manifest);
}

training_checkpoint read_checkpoint(const std::string& path) {
  const auto bytes = read_raw_file(path);
  return checkpoint_of(path, decode_checksummed(path, bytes));
}

} // namespace troupe
