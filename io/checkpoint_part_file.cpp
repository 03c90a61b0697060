// A cluster checkpoint part to and from safetensors (checkpoint_part_file.hpp). The reader is
// as strict as the one-process file's: every tensor must be claimed by the metadata and every
// metadata value well formed, so a part read alone is checked as a whole.
#include "io/checkpoint_part_file.hpp"

#include <set>
#include <stdexcept>

#include "io/checkpoint_codec.hpp"

namespace troupe {

namespace {

const std::string format_version = "1";

std::string key_name(std::size_t slot, std::int64_t offset) {
  return std::to_string(slot) + "@" + std::to_string(offset);
}

std::string worker_prefix(int rank) {
  return "worker" + std::to_string(rank) + "/";
}

template <class Indices> std::string comma_list(const Indices& indices) {
  std::string out;
  for (const auto& i : indices)
    out += (out.empty() ? "" : ",") + std::to_string(i);
  return out;
}

void check_part(const checkpoint_part& part) {
  auto refuse = [](const std::string& what) {
    throw std::invalid_argument("checkpoint part: " + what);
  };
  if (part.shards.empty() && part.replicas.empty())
    refuse("holds no shard and no replica");
  std::set<std::size_t> shards;
  for (const auto& s : part.shards) {
    if (!shards.insert(s.index).second)
      refuse("shard " + std::to_string(s.index) + " given twice");
    const auto& names = optimizer_state_names(s.optimizer);
    for (const auto& k : s.keys) {
      const auto key = "key " + key_name(k.slot, k.offset) + " of shard " + std::to_string(s.index);
      if (k.offset < 0 || k.weights.empty())
        refuse(key + " has no weights or a negative offset");
      if (k.state.tensors.size() != names.size())
        refuse(key + " holds " + std::to_string(k.state.tensors.size()) + " state tensors, "
               + optimizer_name(s.optimizer) + " keeps " + std::to_string(names.size()));
      for (std::size_t t = 0; t < names.size(); ++t)
        if (k.state.tensors[t].shape() != k.weights.shape())
          refuse(key + " has " + names[t] + " of shape " + shape_string(k.state.tensors[t].shape())
                 + " for weights " + shape_string(k.weights.shape()));
    }
  }
  std::set<int> workers;
  for (const auto& [rank, state] : part.replicas)
    if (rank < 0 || !workers.insert(rank).second)
      refuse("worker " + std::to_string(rank) + " negative or given twice");
}

// SGD where the key is absent (a part of SGD's is written without it).
optimizer_kind read_optimizer(layout_reader& r, const std::string& key) {
  if (!r.has(key))
    return optimizer_kind::sgd;
  const auto name = r.text(key);
  const auto kind = optimizer_of_name(name);
  if (!kind || *kind == optimizer_kind::sgd)
    r.fail("metadata " + key + " names '" + name + "', not an optimizer whose state a part holds");
  return *kind;
}

// Each key's update count; none for SGD, whose counts are not saved.
std::vector<std::int64_t> read_steps(layout_reader& r, const std::string& key,
                                     optimizer_kind optimizer, std::size_t keys) {
  std::vector<std::int64_t> out;
  if (optimizer == optimizer_kind::sgd)
    return out;
  for (const auto& count : split_on(r.text(key), ','))
    out.push_back(r.integer(key, count, 0));
  if (out.size() != keys)
    r.fail("metadata " + key + " holds " + std::to_string(out.size()) + " counts for "
           + std::to_string(keys) + " keys");
  return out;
}

} // namespace

std::vector<std::uint8_t> encode_checkpoint_part(const std::string& path, std::int64_t epoch,
                                                 const checkpoint_part& part) {
  check_part(part);
  safetensors_content out;
  auto& m = out.metadata;
  m["format"] = "pt";
  m["troupe.format"] = format_version;
  m["troupe.kind"] = "part";
  m["troupe.epoch"] = std::to_string(epoch);
  std::vector<std::size_t> shard_indices;
  for (const auto& s : part.shards) {
    const auto& names = optimizer_state_names(s.optimizer);
    std::vector<std::string> keys;
    std::vector<std::int64_t> steps;
    for (const auto& k : s.keys) {
      keys.push_back(key_name(k.slot, k.offset));
      out.tensors.push_back({"key/" + keys.back(), k.weights});
      for (std::size_t t = 0; t < names.size(); ++t)
        out.tensors.push_back({names[t] + "/" + keys.back(), k.state.tensors[t]});
      steps.push_back(k.state.steps);
    }
    shard_indices.push_back(s.index);
    const auto prefix = "troupe.shard." + std::to_string(s.index);
    m[prefix] = shard_text(s.counters);
    std::string key_list;
    for (const auto& k : keys)
      key_list += (key_list.empty() ? "" : ",") + k;
    m[prefix + ".keys"] = key_list;
    if (s.optimizer != optimizer_kind::sgd) {
      m[prefix + ".optimizer"] = optimizer_name(s.optimizer);
      m[prefix + ".steps"] = comma_list(steps);
    }
  }
  std::vector<int> worker_indices;
  for (const auto& [rank, state] : part.replicas) {
    std::vector<std::string> names;
    for (const auto& b : state.buffers) {
      names.push_back(b.name);
      out.tensors.push_back({worker_prefix(rank) + b.name, b.value});
    }
    worker_indices.push_back(rank);
    const auto prefix = "troupe.worker." + std::to_string(rank);
    m[prefix + ".buffers"] = join_lines(names);
    m[prefix + ".streams"] = streams_text(state);
  }
  m["troupe.part.shards"] = comma_list(shard_indices);
  m["troupe.part.workers"] = comma_list(worker_indices);
  m[checkpoint_crc_key] = checkpoint_crc_placeholder;
  return encode_checksummed(path, out);
}

decoded_part decode_checkpoint_part(const std::string& path,
                                    const std::vector<std::uint8_t>& bytes) {
  auto content = decode_checksummed(path, bytes);
  layout_reader r(path, content);
  if (!r.has("troupe.kind") || r.text("troupe.kind") != "part")
    r.fail("not a part of a cluster checkpoint (no troupe.kind = part)");
  if (r.text("troupe.format") != format_version)
    r.fail("part format " + r.text("troupe.format") + " is not one this Troupe reads ("
           + format_version + ")");
  decoded_part out;
  out.epoch = r.integer("troupe.epoch", 0);
  for (const auto& index : split_on(r.text("troupe.part.shards"), ',')) {
    shard_part s;
    s.index = static_cast<std::size_t>(r.integer("troupe.part.shards", index, 0));
    const auto prefix = "troupe.shard." + index;
    s.counters = read_shard(r, prefix);
    s.optimizer = read_optimizer(r, prefix + ".optimizer");
    const auto keys = split_on(r.text(prefix + ".keys"), ',');
    const auto steps = read_steps(r, prefix + ".steps", s.optimizer, keys.size());
    const auto& names = optimizer_state_names(s.optimizer);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const auto& key = keys[i];
      const auto at = key.find('@');
      if (at == std::string::npos)
        r.fail("metadata " + prefix + ".keys has the bad entry '" + key + "'");
      key_part k;
      k.slot = static_cast<std::size_t>(r.integer(prefix + ".keys", key.substr(0, at), 0));
      k.offset = r.integer(prefix + ".keys", key.substr(at + 1), 0);
      k.weights = r.take("key/" + key);
      for (const auto& name : names) {
        k.state.tensors.push_back(r.take(name + "/" + key));
        if (k.state.tensors.back().shape() != k.weights.shape())
          r.fail(name + "/" + key + " has shape " + shape_string(k.state.tensors.back().shape())
                 + ", its key " + shape_string(k.weights.shape()));
      }
      k.state.steps = steps.empty() ? 0 : steps[i];
      s.keys.push_back(std::move(k));
    }
    out.part.shards.push_back(std::move(s));
  }
  for (const auto& index : split_on(r.text("troupe.part.workers"), ',')) {
    const auto worker_index = r.integer("troupe.part.workers", index, 0);
    if (worker_index > (1 << 20))
      r.fail("metadata troupe.part.workers names worker " + index);
    const auto rank = static_cast<int>(worker_index);
    const auto prefix = "troupe.worker." + index;
    replica_state state;
    for (const auto& name : lines(r.text(prefix + ".buffers")))
      state.buffers.push_back({name, r.take(worker_prefix(rank) + name)});
    state.streams = read_streams(r, prefix + ".streams");
    out.part.replicas.emplace_back(rank, std::move(state));
  }
  r.require_all_taken();
  return out;
}

} // namespace troupe
