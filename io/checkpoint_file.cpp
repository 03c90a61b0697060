// The checkpoint <-> safetensors mapping (names and metadata keys in checkpoint_file.hpp) and
// the file's checksum. The checksum sits inside the header it covers, so it is computed with
// its own eight hex digits read as '0': the writer encodes with "00000000", sums the whole
// file and patches the digits in; the reader zeroes them in a copy and sums again. Nothing
// else in a header this writer makes can contain the quoted key followed by ':"'.
#include <troupe/io/checkpoint_file.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <zlib.h>

#include "io/checkpoint_layout.hpp"
#include "io/file_bytes.hpp"
#include <troupe/io/atomic_file.hpp>
#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

const std::string format_version = "1";
const std::string crc_key = "troupe.crc32";
const std::string crc_marker = "\"" + crc_key + "\":\"";

std::string join_lines(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : "\n") + n;
  return out;
}

std::uint32_t float_bits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

std::string shard_text(const shard_counters& s) {
  char lr[16];
  std::snprintf(lr, sizeof lr, "%08" PRIx32, float_bits(s.last_learning_rate));
  std::string last;
  for (const auto& [source, step] : s.last_steps)
    last += (last.empty() ? "" : ",") + std::to_string(source) + ":" + std::to_string(step);
  return "step=" + std::to_string(s.updates) + " lr=" + lr + " last=" + last;
}

std::string streams_text(const replica_state& r) {
  std::string out;
  for (const auto& [layer, position] : r.streams)
    out += (out.empty() ? "" : ",") + layer + "=" + std::to_string(position);
  return out;
}

// CRC-32 of `bytes` with the eight at `digits_at` read as '0', in three runs (no copy).
std::uint32_t file_crc(const std::vector<std::uint8_t>& bytes, std::size_t digits_at) {
  static const unsigned char zeros[8] = {'0', '0', '0', '0', '0', '0', '0', '0'};
  auto crc = crc32_z(0L, bytes.data(), digits_at);
  crc = crc32_z(crc, zeros, sizeof zeros);
  const auto after = digits_at + sizeof zeros;
  return static_cast<std::uint32_t>(crc32_z(crc, bytes.data() + after, bytes.size() - after));
}

// Where the checksum's eight digits are: after the marker inside the header.
std::size_t crc_digits_at(const std::string& path, const std::vector<std::uint8_t>& bytes,
                          std::size_t header_end) {
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()), header_end);
  const auto at = header.find(crc_marker);
  if (at == std::string_view::npos || at + crc_marker.size() + 8 > header_end)
    throw io_error(path + ": no " + crc_key + " in the header (not a Troupe checkpoint)");
  return at + crc_marker.size();
}

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
  m[crc_key] = "00000000";
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
  auto bytes = encode_safetensors(to_content(checkpoint));
  std::uint64_t header = 0;
  for (int i = 7; i >= 0; --i)
    header = (header << 8) | bytes[static_cast<std::size_t>(i)];
  const auto digits = crc_digits_at(path, bytes, 8 + header);
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08" PRIx32, file_crc(bytes, digits));
  std::memcpy(bytes.data() + digits, hex, 8);
  write_file_atomically(path, bytes);
}

training_checkpoint read_checkpoint(const std::string& path) {
  const auto bytes = read_raw_file(path);
  auto content = decode_safetensors(path, bytes);
  std::uint64_t header = 0;
  for (int i = 7; i >= 0; --i)
    header = (header << 8) | bytes[static_cast<std::size_t>(i)];
  const auto stated = content.metadata.find(crc_key);
  if (stated == content.metadata.end())
    throw io_error(path + ": no " + crc_key + " in the metadata (not a Troupe checkpoint)");
  char actual[9];
  std::snprintf(actual, sizeof actual, "%08" PRIx32,
                file_crc(bytes, crc_digits_at(path, bytes, 8 + header)));
  if (stated->second != actual)
    throw io_error(path + ": checksum mismatch (the file says " + stated->second
                   + ", its bytes give " + actual + "): the checkpoint is corrupted");
  return checkpoint_of(path, std::move(content));
}

} // namespace troupe
