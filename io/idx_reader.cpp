// Parser for the idx files of MNIST and Fashion-MNIST (format in idx_reader.hpp).
//
// A file is read whole (inflated when gzip) and then checked field by field, so that each
// way a download can go wrong (a truncated transfer, an HTML error page saved under the
// dataset's name, image and label files from different releases) gets its own message naming
// the file, instead of a dataset that is silently short or shifted.
#include <troupe/io/idx_reader.hpp>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "io/file_bytes.hpp"

namespace troupe {

namespace {

constexpr std::uint8_t unsigned_byte_type = 0x08;

struct idx_array {
  std::vector<std::uint64_t> extents;
  std::vector<std::uint8_t> values;
};

std::uint32_t read_big_endian(const std::uint8_t* p) {
  return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8
         | std::uint32_t(p[3]);
}

// Checks magic, type and rank; returns the header length (4 + 4 * rank).
std::size_t check_header(const std::string& path, const std::vector<std::uint8_t>& bytes,
                         std::size_t rank, const char* kind) {
  if (bytes.size() < 4)
    throw io_error(path + ": truncated: " + std::to_string(bytes.size())
                   + " bytes, too short for an idx header");
  if (bytes[0] != 0 || bytes[1] != 0) {
    char magic[16];
    std::snprintf(magic, sizeof magic, "0x%08x", unsigned(read_big_endian(bytes.data())));
    throw io_error(path + ": bad magic " + magic + ", not an idx file (expected 0x0000TTRR)");
  }
  if (bytes[2] != unsigned_byte_type) {
    char code[8];
    std::snprintf(code, sizeof code, "0x%02x", unsigned(bytes[2]));
    throw io_error(path + ": element type code " + code + " is not 0x08 (unsigned byte)");
  }
  if (bytes[3] != rank)
    throw io_error(path + ": rank " + std::to_string(bytes[3]) + ", expected "
                   + std::to_string(rank) + " for " + kind + " data");
  const std::size_t header = 4 + 4 * rank;
  if (bytes.size() < header)
    throw io_error(path + ": truncated: expected a " + std::to_string(header) + "-byte header, got "
                   + std::to_string(bytes.size()) + " bytes");
  return header;
}

// Reads an idx file of unsigned bytes with the given rank; `kind` ("image", "label") words
// the messages.
idx_array read_idx(const std::string& path, std::size_t rank, const char* kind) {
  auto bytes = read_file_bytes(path);
  const std::size_t header = check_header(path, bytes, rank, kind);

  idx_array array;
  std::uint64_t expected = 1;
  bool huge = false; // extents whose product passes 2^48 bytes; no real file is that big
  for (std::size_t i = 0; i < rank; ++i) {
    const std::uint64_t extent = read_big_endian(bytes.data() + 4 + 4 * i);
    array.extents.push_back(extent);
    // expected <= 2^48 and extent < 2^32 here, so the product cannot wrap.
    expected *= extent;
    if (expected > std::uint64_t(1) << 48) {
      huge = true;
      expected = std::uint64_t(1) << 48;
    }
  }
  const std::uint64_t got = bytes.size() - header;
  if (huge)
    throw io_error(path + ": truncated: extents call for more than 2^48 bytes of " + kind
                   + " data, got " + std::to_string(got));
  if (got < expected)
    throw io_error(path + ": truncated: expected " + std::to_string(expected) + " bytes of " + kind
                   + " data, got " + std::to_string(got));
  if (got > expected)
    throw io_error(path + ": trailing garbage: " + std::to_string(got - expected)
                   + " bytes after the " + std::to_string(expected) + " bytes of " + kind
                   + " data");
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(header));
  array.values = std::move(bytes);
  return array;
}

std::vector<std::int32_t> checked_labels(const std::string& path,
                                         const std::vector<std::uint8_t>& raw, int classes) {
  std::vector<std::int32_t> labels(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] >= classes)
      throw io_error(path + ": label " + std::to_string(raw[i]) + " at index " + std::to_string(i)
                     + " is out of range [0, " + std::to_string(classes) + ")");
    labels[i] = raw[i];
  }
  return labels;
}

const char* split_name(split which) {
  return which == split::train ? "train" : "test";
}

// "<dir>/<base>.gz" if present, else "<dir>/<base>" if present, else empty.
std::string find_idx_file(const std::string& dir, const std::string& base) {
  namespace fs = std::filesystem;
  std::error_code error;
  const auto plain = (fs::path(dir) / base).string();
  if (fs::exists(plain + ".gz", error))
    return plain + ".gz";
  if (fs::exists(plain, error))
    return plain;
  return {};
}

} // namespace

std::shared_ptr<const dataset> load_idx(const std::string& images_path,
                                        const std::string& labels_path, int classes,
                                        const std::string& description) {
  if (classes < 1 || classes > 256)
    throw std::invalid_argument("load_idx: classes must be in [1, 256], got "
                                + std::to_string(classes));
  auto images = read_idx(images_path, 3, "image");
  const auto label_bytes = read_idx(labels_path, 1, "label");
  if (images.extents[0] != label_bytes.extents[0]) {
    std::ostringstream message;
    message << "image/label count mismatch: " << images_path << " holds " << images.extents[0]
            << " images, " << labels_path << " holds " << label_bytes.extents[0] << " labels";
    throw io_error(message.str());
  }
  if (images.extents[1] == 0 || images.extents[2] == 0)
    throw io_error(images_path + ": images are " + std::to_string(images.extents[1]) + " x "
                   + std::to_string(images.extents[2]) + " pixels; both extents must be > 0");
  auto labels = checked_labels(labels_path, label_bytes.values, classes);
  const shape_t sample_shape{1, std::int64_t(images.extents[1]), std::int64_t(images.extents[2])};
  return std::make_shared<const dataset>(description, sample_shape, classes,
                                         std::move(images.values), std::move(labels));
}

std::shared_ptr<const dataset> load_mnist_dir(const std::string& dir, split which,
                                              const std::string& name) {
  const std::string prefix = which == split::train ? "train" : "t10k";
  const std::string bases[2] = {prefix + "-images-idx3-ubyte", prefix + "-labels-idx1-ubyte"};
  std::string paths[2];
  std::string missing;
  for (int i = 0; i < 2; ++i) {
    paths[i] = find_idx_file(dir, bases[i]);
    if (paths[i].empty()) {
      const auto plain = (std::filesystem::path(dir) / bases[i]).string();
      missing += (missing.empty() ? "" : "; ") + plain + ".gz or " + plain;
    }
  }
  if (!missing.empty())
    throw io_error(dir + ": " + name + " " + split_name(which) + " files not found: " + missing);
  return load_idx(paths[0], paths[1], 10, name + " " + split_name(which) + " (" + dir + ")");
}

} // namespace troupe
