// Helpers for the io tests: a self-deleting temporary directory and writers for small files
// in the real on-disk formats (idx, plain or gzip via zlib's gzwrite; CIFAR-10 records).
//
// Tests build their fixtures byte by byte here instead of shipping binary files, so each test
// shows exactly which bytes it feeds the reader and which corruption it plants.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <zlib.h>

namespace troupe::test {

using bytes = std::vector<std::uint8_t>;

/// A fresh directory under the system temp dir, removed with everything in it on scope exit.
class temp_dir {
public:
  temp_dir() {
    std::string pattern =
      (std::filesystem::temp_directory_path() / "troupe_io_test_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

inline void write_file(const std::string& path, const bytes& content) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(content.data()),
            static_cast<std::streamsize>(content.size()));
  if (!out)
    throw std::runtime_error("cannot write test file " + path);
}

/// Writes `content` gzip-compressed through zlib's gzFile interface, as gzip(1) would.
inline void write_gzip_file(const std::string& path, const bytes& content) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (file == nullptr)
    throw std::runtime_error("gzopen failed for " + path);
  const int written =
    content.empty() ? 0 : gzwrite(file, content.data(), static_cast<unsigned>(content.size()));
  if (gzclose(file) != Z_OK || written != static_cast<int>(content.size()))
    throw std::runtime_error("gzwrite failed for " + path);
}

inline bytes read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// An idx file: magic 00 00 <type> <rank>, big-endian extents, then `payload` as is.
inline bytes idx_bytes(const std::vector<std::uint32_t>& extents, const bytes& payload,
                       std::uint8_t type = 0x08) {
  bytes out{0, 0, type, static_cast<std::uint8_t>(extents.size())};
  for (auto e : extents) {
    out.push_back(std::uint8_t(e >> 24));
    out.push_back(std::uint8_t(e >> 16));
    out.push_back(std::uint8_t(e >> 8));
    out.push_back(std::uint8_t(e));
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

/// Image bytes whose value encodes (example, y, x), so a misplaced byte shows up.
inline bytes pattern_pixels(std::uint32_t count, std::uint32_t height, std::uint32_t width) {
  bytes out;
  for (std::uint32_t n = 0; n < count; ++n)
    for (std::uint32_t y = 0; y < height; ++y)
      for (std::uint32_t x = 0; x < width; ++x)
        out.push_back(std::uint8_t(n * 37 + y * 11 + x * 3));
  return out;
}

/// One CIFAR-10 record: the label byte, then 3072 pixel bytes derived from `seed`.
inline bytes cifar_record(std::uint8_t label, std::uint32_t seed) {
  bytes out{label};
  for (std::uint32_t i = 0; i < 3072; ++i)
    out.push_back(std::uint8_t(seed * 131 + i * 7 + i / 1024));
  return out;
}

} // namespace troupe::test
