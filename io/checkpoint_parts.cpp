// Names, writers and the reader's front door for cluster checkpoints (checkpoint_parts.hpp):
// which kind of checkpoint an epoch has, and the counters a re-sharded run resumes with.
// Putting the parts together is checkpoint_assembly.cpp.
#include <troupe/io/checkpoint_parts.hpp>

#include <stdexcept>

#include <sys/stat.h>

#include "io/checkpoint_codec.hpp"
#include "io/checkpoint_manifest.hpp"
#include "io/checkpoint_part_file.hpp"
#include <troupe/io/atomic_file.hpp>
#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

// "PREFIX-0003": checkpoint_path without its suffix (and with its checks).
std::string numbered(const std::string& prefix, std::int64_t epoch) {
  const auto path = checkpoint_path(prefix, epoch);
  return path.substr(0, path.size() - std::string(".safetensors").size());
}

bool exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

bool same_counters(const shard_counters& a, const shard_counters& b) {
  // As the file spells them: the learning rate as bits, so NaN equals itself.
  return shard_text(a) == shard_text(b);
}

} // namespace

std::string checkpoint_manifest_path(const std::string& prefix, std::int64_t epoch) {
  return numbered(prefix, epoch) + ".manifest.json";
}

std::string checkpoint_part_path(const std::string& prefix, std::int64_t epoch,
                                 const std::string& node) {
  bool plain = !node.empty();
  for (char c : node)
    plain = plain
            && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || c == '_' || c == '-');
  if (!plain)
    throw std::invalid_argument("checkpoint: the node name '" + node
                                + "' is not letters, digits, '_' and '-'");
  return numbered(prefix, epoch) + "." + node + ".safetensors";
}

part_record write_checkpoint_part(const std::string& path, std::int64_t epoch,
                                  const checkpoint_part& part) {
  if (epoch < 0)
    throw std::invalid_argument("checkpoint part: negative epoch " + std::to_string(epoch));
  const auto bytes = encode_checkpoint_part(path, epoch, part);
  write_file_atomically(path, bytes);
  const auto slash = path.rfind('/');
  return {slash == std::string::npos ? path : path.substr(slash + 1), bytes.size(),
          sha256_text(bytes)};
}

void write_checkpoint_manifest(const std::string& prefix, const checkpoint_header& header,
                               const std::vector<part_record>& parts) {
  const auto text = encode_checkpoint_manifest(header, parts);
  // PREFIX-EEEE.manifest.json displaces PREFIX-EEEE.safetensors: one kind per epoch.
  write_file_atomically(checkpoint_manifest_path(prefix, header.epoch),
                        std::vector<std::uint8_t>(text.begin(), text.end()),
                        checkpoint_path(prefix, header.epoch));
}

std::string existing_checkpoint_path(const std::string& prefix, std::int64_t epoch) {
  const auto manifest = checkpoint_manifest_path(prefix, epoch);
  return exists(manifest) ? manifest : checkpoint_path(prefix, epoch);
}

training_checkpoint read_any_checkpoint(const std::string& prefix, std::int64_t epoch) {
  const auto single = checkpoint_path(prefix, epoch);
  const auto manifest = checkpoint_manifest_path(prefix, epoch);
  const bool cluster = exists(manifest);
  if (cluster && exists(single))
    throw io_error(single + " and " + manifest + ": two checkpoints of epoch "
                   + std::to_string(epoch)
                   + " (one-process and cluster); a writer keeps one, so remove the one you do "
                     "not want");
  if (!cluster)
    return read_checkpoint(single);
  auto c = read_checkpoint_manifest(manifest);
  if (c.epoch != epoch)
    throw io_error(manifest + ": holds the state after epoch " + std::to_string(c.epoch) + ", not "
                   + std::to_string(epoch) + " (a renamed file?)");
  return c;
}

shard_counters resumed_counters(const training_checkpoint& checkpoint, std::size_t index,
                                std::size_t shards, const std::string& path) {
  const auto& saved = checkpoint.shards;
  if (saved.empty())
    throw io_error(path + ": holds no shard counters");
  if (index >= shards)
    throw std::invalid_argument("resumed_counters: shard " + std::to_string(index) + " of "
                                + std::to_string(shards));
  if (saved.size() == shards)
    return saved[index];
  for (const auto& s : saved)
    if (!same_counters(s, saved[0]))
      throw io_error(path + ": was written by a run of " + std::to_string(saved.size())
                     + " shard(s) and its shards' counters differ (async/ssp): resume with "
                     + std::to_string(saved.size()) + " shards, this run has "
                     + std::to_string(shards));
  return saved[0];
}

} // namespace troupe
