// The pieces checkpoint_codec.hpp lists, shared by the one-process file and the cluster parts
// so both are checked and spelled alike.
#include "io/checkpoint_codec.hpp"

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <openssl/evp.h>
#include <zlib.h>

#include <troupe/io/dataset.hpp>

namespace troupe {

const std::string checkpoint_crc_key = "troupe.crc32";

namespace {

const std::string crc_marker = "\"" + checkpoint_crc_key + "\":\"";

std::uint32_t float_bits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

std::uint64_t header_length(const std::vector<std::uint8_t>& bytes) {
  std::uint64_t header = 0;
  for (int i = 7; i >= 0; --i)
    header = (header << 8) | bytes[static_cast<std::size_t>(i)];
  return header;
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
std::size_t crc_digits_at(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  const auto header_end = 8 + header_length(bytes);
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()), header_end);
  const auto at = header.find(crc_marker);
  if (at == std::string_view::npos || at + crc_marker.size() + 8 > header_end)
    throw io_error(path + ": no " + checkpoint_crc_key
                   + " in the header (not a Troupe checkpoint)");
  return at + crc_marker.size();
}

std::string hex8(std::uint32_t value) {
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08" PRIx32, value);
  return hex;
}

} // namespace

std::vector<std::uint8_t> encode_checksummed(const std::string& path,
                                             const safetensors_content& content) {
  auto bytes = encode_safetensors(content);
  const auto digits = crc_digits_at(path, bytes);
  std::memcpy(bytes.data() + digits, hex8(file_crc(bytes, digits)).data(), 8);
  return bytes;
}

safetensors_content decode_checksummed(const std::string& path,
                                       const std::vector<std::uint8_t>& bytes) {
  auto content = decode_safetensors(path, bytes);
  const auto stated = content.metadata.find(checkpoint_crc_key);
  if (stated == content.metadata.end())
    throw io_error(path + ": no " + checkpoint_crc_key
                   + " in the metadata (not a Troupe checkpoint)");
  const auto actual = hex8(file_crc(bytes, crc_digits_at(path, bytes)));
  if (stated->second != actual)
    throw io_error(path + ": checksum mismatch (the file says " + stated->second
                   + ", its bytes give " + actual + "): the checkpoint is corrupted");
  return content;
}

std::string sha256_text(const std::vector<std::uint8_t>& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: OpenSSL's EVP_Digest failed");
  std::string out = "sha256:";
  static const char* hex = "0123456789abcdef";
  for (unsigned int i = 0; i < length; ++i)
    out += {hex[digest[i] >> 4], hex[digest[i] & 15]};
  return out;
}

std::string join_lines(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : "\n") + n;
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::vector<std::string> split_on(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, separator);)
    out.push_back(item);
  return out;
}

std::string shard_text(const shard_counters& s) {
  std::string last;
  for (const auto& [source, step] : s.last_steps)
    last += (last.empty() ? "" : ",") + std::to_string(source) + ":" + std::to_string(step);
  std::string set;
  const std::pair<const char*, std::optional<float>> settings[] = {
    {"lr", s.base_lr}, {"momentum", s.momentum}, {"wd", s.weight_decay}};
  for (const auto& [name, value] : settings)
    if (value)
      set += (set.empty() ? "" : ",") + std::string(name) + ":" + hex8(float_bits(*value));
  return "step=" + std::to_string(s.updates) + " lr=" + hex8(float_bits(s.last_learning_rate))
         + " last=" + last + (set.empty() ? "" : " set=" + set);
}

std::string streams_text(const replica_state& r) {
  std::string out;
  for (const auto& [layer, position] : r.streams)
    out += (out.empty() ? "" : ",") + layer + "=" + std::to_string(position);
  return out;
}

layout_reader::layout_reader(const std::string& path, safetensors_content& content)
    : path_(path), content_(content) {
  for (auto& t : content_.tensors)
    tensors_.emplace(t.name, &t.value);
}

void layout_reader::fail(const std::string& what) const {
  throw io_error(path_ + ": " + what);
}

const std::string& layout_reader::text(const std::string& key) const {
  auto it = content_.metadata.find(key);
  if (it == content_.metadata.end())
    fail("metadata lacks " + key + " (not a Troupe checkpoint, or a damaged one)");
  return it->second;
}

std::int64_t layout_reader::integer(const std::string& key, const std::string& value,
                                    std::int64_t low) const {
  std::int64_t v = 0;
  std::size_t used = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || v < low)
    fail("metadata " + key + " has the bad value '" + value + "'");
  return v;
}

std::int64_t layout_reader::integer(const std::string& key, std::int64_t low) const {
  return integer(key, text(key), low);
}

tensor layout_reader::take(const std::string& name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    fail("tensor '" + name + "' is missing");
  tensor t = *it->second;
  tensors_.erase(it);
  return t;
}

void layout_reader::require_all_taken() const {
  if (!tensors_.empty())
    fail("tensor '" + tensors_.begin()->first + "' is not part of a Troupe checkpoint");
}

shard_counters read_shard(const layout_reader& r, const std::string& key) {
  const auto& value = r.text(key);
  shard_counters s;
  const auto fields = split_on(value, ' ');
  const auto bad = [&] { r.fail("metadata " + key + " has the bad value '" + value + "'"); };
  if ((fields.size() != 3 && fields.size() != 4) || fields[0].rfind("step=", 0) != 0
      || fields[1].rfind("lr=", 0) != 0 || fields[2].rfind("last=", 0) != 0
      || fields[1].size() != 11 || (fields.size() == 4 && fields[3].rfind("set=", 0) != 0))
    bad();
  s.updates = r.integer(key, fields[0].substr(5), 0);
  // Eight hex digits: a float's bits.
  const auto float_of = [&](const std::string& hex) {
    if (hex.size() != 8)
      bad();
    std::uint32_t bits = 0;
    for (char c : hex) {
      if (!std::isxdigit(static_cast<unsigned char>(c)))
        bad();
      bits = bits * 16
             + static_cast<std::uint32_t>(
               std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    float out = 0;
    std::memcpy(&out, &bits, sizeof bits);
    return out;
  };
  s.last_learning_rate = float_of(fields[1].substr(3));
  if (fields.size() == 4)
    for (const auto& pair : split_on(fields[3].substr(4), ',')) {
      const auto colon = pair.find(':');
      const auto name = pair.substr(0, colon);
      auto& slot = name == "lr" ? s.base_lr : name == "momentum" ? s.momentum : s.weight_decay;
      if (colon == std::string::npos || (name != "lr" && name != "momentum" && name != "wd")
          || slot)
        bad();
      slot = float_of(pair.substr(colon + 1));
    }
  for (const auto& pair : split_on(fields[2].substr(5), ',')) {
    const auto colon = pair.find(':');
    if (colon == std::string::npos)
      r.fail("metadata " + key + " has the bad value '" + value + "'");
    const auto source = r.integer(key, pair.substr(0, colon), 0);
    s.last_steps[static_cast<int>(source)] = r.integer(key, pair.substr(colon + 1), 0);
  }
  return s;
}

std::vector<std::pair<std::string, std::uint64_t>> read_streams(const layout_reader& r,
                                                                const std::string& key) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const auto& item : split_on(r.text(key), ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      r.fail("metadata " + key + " has the bad entry '" + item + "'");
    out.emplace_back(item.substr(0, eq),
                     static_cast<std::uint64_t>(r.integer(key, item.substr(eq + 1), 0)));
  }
  return out;
}

} // namespace troupe
