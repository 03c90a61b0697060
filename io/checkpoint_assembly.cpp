// Puts a cluster checkpoint back together (read_checkpoint_manifest, checkpoint_parts.hpp).
// Each part is held to the manifest's record before it is decoded: its size first (a
// truncated file says so plainly), then its sha256 (a flipped byte, or another run's part of
// the same name), then its own CRC and layout, then its epoch. The assembly then insists that
// every shard and every worker comes from exactly one part and that the keys tile every
// parameter exactly: a gap or an overlap means parts of different key plans were mixed, and a
// run resumed from that would not be the run it claims to continue.
#include <troupe/io/checkpoint_parts.hpp>

#include <algorithm>
#include <cstring>
#include <optional>

#include "io/checkpoint_codec.hpp"
#include "io/checkpoint_manifest.hpp"
#include "io/checkpoint_part_file.hpp"
#include "io/file_bytes.hpp"
#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw io_error(file + ": " + what);
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// The part's bytes, checked against the manifest's record, decoded and of the right epoch.
checkpoint_part read_part(const std::string& manifest, const std::string& path,
                          const part_record& record, std::int64_t epoch) {
  std::vector<std::uint8_t> bytes;
  try {
    bytes = read_raw_file(path);
  } catch (const io_error& e) {
    throw io_error(std::string(e.what()) + " (a part that " + manifest + " names)");
  }
  if (bytes.size() != record.bytes)
    fail(path, "has " + std::to_string(bytes.size()) + " bytes where the manifest " + manifest
                 + " records " + std::to_string(record.bytes)
                 + " (truncated, or not the part that was written)");
  const auto checksum = sha256_text(bytes);
  if (checksum != record.checksum)
    fail(path, "checksum " + checksum + " differs from the manifest's " + record.checksum + " ("
                 + manifest + "): the part is corrupted or not the part that was written");
  auto decoded = decode_checkpoint_part(path, bytes);
  if (decoded.epoch != epoch)
    fail(path, "is a part of epoch " + std::to_string(decoded.epoch) + ", the manifest " + manifest
                 + " is of epoch " + std::to_string(epoch));
  return std::move(decoded.part);
}

struct span {
  std::int64_t offset = 0;
  std::int64_t length = 0;
  std::string file;
};

class assembly {
public:
  assembly(const std::string& manifest, const checkpoint_header& header)
      : manifest_(manifest), header_(header), spans_(header.parameter_shapes.size()),
        shard_files_(header.shards), worker_files_(static_cast<std::size_t>(header.workers)) {
    // Unset at first: finish() refuses any element no key wrote.
    for (const auto& shape : header.parameter_shapes)
      weights_.push_back(tensor::uninitialized(shape));
    shards_.resize(header.shards);
    replicas_.resize(worker_files_.size());
  }

  void add(const std::string& file, checkpoint_part& part) {
    for (auto& s : part.shards) {
      if (s.index >= header_.shards)
        fail(file, "holds shard " + std::to_string(s.index) + ", the manifest's run has "
                     + std::to_string(header_.shards));
      claim(shard_files_[s.index], file, "shard " + std::to_string(s.index));
      take_optimizer(file, s);
      shards_[s.index] = s.counters;
      for (const auto& k : s.keys)
        place(file, k);
    }
    for (auto& [rank, state] : part.replicas) {
      if (static_cast<std::size_t>(rank) >= worker_files_.size())
        fail(file, "holds worker " + std::to_string(rank) + ", the manifest's run has "
                     + std::to_string(header_.workers));
      claim(worker_files_[static_cast<std::size_t>(rank)], file, "worker " + std::to_string(rank));
      replicas_[static_cast<std::size_t>(rank)] = std::move(state);
    }
  }

  training_checkpoint finish() {
    for (std::size_t i = 0; i < shard_files_.size(); ++i)
      if (shard_files_[i].empty())
        fail(manifest_,
             "no part holds shard " + std::to_string(i) + " of " + std::to_string(header_.shards));
    for (std::size_t w = 0; w < worker_files_.size(); ++w)
      if (worker_files_[w].empty())
        fail(manifest_, "no part holds worker " + std::to_string(w) + " of "
                          + std::to_string(header_.workers));
    for (std::size_t slot = 0; slot < spans_.size(); ++slot)
      check_tiled(slot);
    for (std::size_t w = 1; w < replicas_.size(); ++w)
      check_same_buffers(w);
    training_checkpoint c;
    c.epoch = header_.epoch;
    c.network = header_.network;
    c.steps_per_epoch = header_.steps_per_epoch;
    for (std::size_t slot = 0; slot < weights_.size(); ++slot)
      c.parameters.push_back({header_.parameter_names[slot], weights_[slot]});
    c.optimizer = optimizer_;
    for (std::size_t slot = 0; slot < weights_.size(); ++slot)
      c.state.push_back(optimizer_state{state_[slot], steps_[slot].value_or(0)});
    c.shards = shards_;
    c.replicas = replicas_;
    return c;
  }

private:
  // The first shard decides the run's optimizer and shapes its state; every other must agree.
  void take_optimizer(const std::string& file, const shard_part& s) {
    if (optimizer_file_.empty()) {
      optimizer_ = s.optimizer;
      optimizer_file_ = file;
      const auto kept = optimizer_state_names(optimizer_).size();
      state_.resize(weights_.size());
      for (std::size_t slot = 0; slot < weights_.size(); ++slot)
        for (std::size_t t = 0; t < kept; ++t)
          state_[slot].push_back(tensor::uninitialized(weights_[slot].shape()));
      steps_.resize(weights_.size());
      return;
    }
    if (s.optimizer != optimizer_)
      fail(file, std::string("holds ") + optimizer_name(s.optimizer) + "'s state in shard "
                   + std::to_string(s.index) + ", " + optimizer_file_ + " holds "
                   + optimizer_name(optimizer_) + "'s (" + manifest_ + ")");
  }

  void claim(std::string& owner, const std::string& file, const std::string& what) {
    if (!owner.empty())
      fail(file, "holds " + what + ", which " + owner + " holds too (" + manifest_ + ")");
    owner = file;
  }

  // Copies a key's values into its parameter; the tiling is checked once all are in.
  void place(const std::string& file, const key_part& k) {
    const auto name = std::to_string(k.slot) + "@" + std::to_string(k.offset);
    if (k.slot >= weights_.size())
      fail(file, "key " + name + " is of parameter slot " + std::to_string(k.slot)
                   + ", the manifest names " + std::to_string(weights_.size()));
    auto& target = weights_[k.slot];
    const auto& parameter = header_.parameter_names[k.slot];
    const bool whole = k.offset == 0 && k.weights.shape() == target.shape();
    if (!whole && k.weights.rank() != 1)
      fail(file, "key " + name + " (" + parameter + ") has shape " + shape_string(k.weights.shape())
                   + ": neither flat nor the parameter's " + shape_string(target.shape()));
    if (k.weights.numel() > target.numel() || k.offset > target.numel() - k.weights.numel())
      fail(file, "key " + name + " (" + parameter + ") of " + std::to_string(k.weights.numel())
                   + " elements runs past the parameter's " + std::to_string(target.numel()));
    std::memcpy(target.data() + k.offset, k.weights.data(), k.weights.bytes());
    // As many tensors as state_ holds: the decoder took exactly those its shard's optimizer
    // keeps, and take_optimizer held every shard to one optimizer.
    auto& state = state_[k.slot];
    for (std::size_t t = 0; t < state.size(); ++t)
      std::memcpy(state[t].data() + k.offset, k.state.tensors[t].data(),
                  k.state.tensors[t].bytes());
    // Every step updates every key of a parameter, so its keys have one count between them.
    auto& steps = steps_[k.slot];
    if (steps && *steps != k.state.steps)
      fail(file, "key " + name + " (" + parameter + ") has had " + std::to_string(k.state.steps)
                   + " updates, another key of it " + std::to_string(*steps)
                   + " (parts of different steps mixed? " + manifest_ + ")");
    steps = k.state.steps;
    spans_[k.slot].push_back({k.offset, k.weights.numel(), file});
  }

  void check_tiled(std::size_t slot) {
    auto& spans = spans_[slot];
    std::sort(spans.begin(), spans.end(),
              [](const span& a, const span& b) { return a.offset < b.offset; });
    const auto& parameter = header_.parameter_names[slot];
    std::int64_t covered = 0;
    const span* previous = nullptr;
    for (const auto& s : spans) {
      if (s.offset < covered)
        fail(s.file, "key " + std::to_string(slot) + "@" + std::to_string(s.offset) + " ("
                       + parameter + ") overlaps elements up to " + std::to_string(covered)
                       + " that " + previous->file + " holds too (" + manifest_ + ")");
      if (s.offset > covered)
        break;
      covered = s.offset + s.length;
      previous = &s;
    }
    const auto numel = weights_[slot].numel();
    if (covered < numel) {
      std::int64_t end = numel;
      for (const auto& s : spans)
        if (s.offset > covered) {
          end = s.offset;
          break;
        }
      fail(manifest_, "elements [" + std::to_string(covered) + ", " + std::to_string(end) + ") of "
                        + parameter + " are in no part");
    }
  }

  void check_same_buffers(std::size_t w) {
    const auto& first = replicas_[0].buffers;
    const auto& these = replicas_[w].buffers;
    bool same = these.size() == first.size();
    for (std::size_t b = 0; same && b < these.size(); ++b)
      same = these[b].name == first[b].name && these[b].value.shape() == first[b].value.shape();
    if (!same)
      fail(worker_files_[w], "worker " + std::to_string(w) + "'s buffers differ from worker 0's ("
                               + worker_files_[0] + ")");
  }

  std::string manifest_;
  const checkpoint_header& header_;
  std::vector<std::vector<span>> spans_;
  std::vector<std::string> shard_files_, worker_files_; // who holds each; empty: nobody yet
  std::vector<tensor> weights_;
  optimizer_kind optimizer_ = optimizer_kind::sgd;
  std::string optimizer_file_; // the part whose shard decided optimizer_; empty: none yet
  std::vector<std::vector<tensor>> state_;         // by slot, optimizer_state_names order
  std::vector<std::optional<std::int64_t>> steps_; // by slot; unset: no key placed yet
  std::vector<shard_counters> shards_;
  std::vector<replica_state> replicas_;
};

} // namespace

training_checkpoint read_checkpoint_manifest(const std::string& manifest_path) {
  const auto bytes = read_raw_file(manifest_path);
  const auto m = decode_checkpoint_manifest(manifest_path, std::string(bytes.begin(), bytes.end()));
  assembly whole(manifest_path, m.header);
  const auto directory = directory_of(manifest_path);
  for (const auto& record : m.parts) {
    const auto path = directory + record.file;
    auto part = read_part(manifest_path, path, record, m.header.epoch);
    whole.add(path, part);
  }
  return whole.finish();
}

} // namespace troupe
