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
  if (c.momentum.size() != c.parameters.size())
    throw std::invalid_argument("checkpoint: " + std::to_string(c.momentum.size())
                                + " momentum tensors for " + std::to_string(c.parameters.size())
                                + " parameters");
  for (std::size_t i = 0; i < c.parameters.size(); ++i)
    if (c.momentum[i].shape() != c.parameters[i].value.shape())
      throw std::invalid_argument("checkpoint: momentum of " + c.parameters[i].name + " has shape "
                                  + shape_string(c.momentum[i].shape()));
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
  for (std::size_t i = 0; i < c.parameters.size(); ++i)
    out.tensors.push_back({"momentum/" + c.parameters[i].name, c.momentum[i]});
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
