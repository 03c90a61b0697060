// Private to io/: what the one-process checkpoint file (checkpoint_file.cpp) and a cluster
// checkpoint's parts (checkpoint_part_file.cpp) share: the self-checksum inside the header,
// the metadata texts of counters and stream positions, and a reader that takes tensors and
// metadata keys out of a decoded file strictly, failing with the file's name.
//
// The checksum sits inside the header it covers, so it is computed with its own eight hex
// digits read as '0': the writer encodes with "00000000", sums the whole file and patches the
// digits in; the reader sums again with them read as '0'. Nothing else in a header these
// writers make can contain the quoted key followed by ':"'.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <troupe/io/checkpoint_file.hpp>

namespace troupe {

/// The metadata key of the CRC-32, and the placeholder a writer puts in it.
extern const std::string checkpoint_crc_key;
constexpr const char* checkpoint_crc_placeholder = "00000000";

/// The file's bytes with troupe.crc32 filled in (`content` must hold the placeholder).
/// `path` names the file in errors.
std::vector<std::uint8_t> encode_checksummed(const std::string& path,
                                             const safetensors_content& content);

/// Decodes a file and checks its troupe.crc32: io_error starting with `path` when it is not
/// safetensors, has no checksum, or its bytes disagree with it ("checksum mismatch ...").
safetensors_content decode_checksummed(const std::string& path,
                                       const std::vector<std::uint8_t>& bytes);

/// "sha256:<64 lowercase hex digits>" of `bytes` (OpenSSL).
std::string sha256_text(const std::vector<std::uint8_t>& bytes);

std::string join_lines(const std::vector<std::string>& names);
std::vector<std::string> lines(const std::string& text);
std::vector<std::string> split_on(const std::string& text, char separator);

/// "step=S lr=XXXXXXXX last=W:T,...", and "layer=calls,..." (docs/checkpoints.md).
std::string shard_text(const shard_counters& counters);
std::string streams_text(const replica_state& replica);

/// Takes tensors and metadata out of one decoded file; every failure is an io_error that
/// starts with the path.
class layout_reader {
public:
  layout_reader(const std::string& path, safetensors_content& content);

  [[noreturn]] void fail(const std::string& what) const;
  const std::string& path() const { return path_; }
  bool has(const std::string& key) const { return content_.metadata.count(key) > 0; }
  /// The metadata value; missing: "metadata lacks KEY".
  const std::string& text(const std::string& key) const;
  /// `value` (of `key`) as a decimal integer of at least `low`.
  std::int64_t integer(const std::string& key, const std::string& value, std::int64_t low) const;
  std::int64_t integer(const std::string& key, std::int64_t low) const;
  /// Takes the tensor out of the pool of unclaimed ones; missing: "tensor 'NAME' is missing".
  tensor take(const std::string& name);
  /// Fails naming a tensor nobody took.
  void require_all_taken() const;

private:
  std::string path_;
  safetensors_content& content_;
  std::map<std::string, tensor*> tensors_;
};

/// The counters in metadata `key` (shard_text's form).
shard_counters read_shard(const layout_reader& reader, const std::string& key);
/// The stream positions in metadata `key` (streams_text's form).
std::vector<std::pair<std::string, std::uint64_t>> read_streams(const layout_reader& reader,
                                                                const std::string& key);

} // namespace troupe
