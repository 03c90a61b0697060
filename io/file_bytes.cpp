// Whole-file reads and in-memory gzip inflation (see file_bytes.hpp).
//
// Inflation runs on a buffer rather than through gzread because zlib's inflate() reports
// exactly how a stream failed (bad header, bad distance, input ended early), which gzread
// folds into a short read that looks like a truncated idx file.
#include "io/file_bytes.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include <sys/stat.h>
#include <zlib.h>

namespace troupe {

namespace {

struct file_closer {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

// Largest ratio deflate can achieve is about 1032:1; beyond that a stored size is a lie.
constexpr std::uint64_t max_deflate_ratio = 1032;

// Output size to start with: the gzip trailer's ISIZE (uncompressed size mod 2^32) of the last
// member, which is exact for files under 4 GiB; one spare byte lets inflate see the end of
// the stream without a regrowth of the whole buffer.
std::size_t initial_output_size(const std::vector<std::uint8_t>& packed) {
  std::uint64_t guess = 4 * packed.size();
  if (packed.size() >= 18) {
    const std::uint8_t* t = packed.data() + packed.size() - 4;
    guess = std::uint64_t(t[0]) | std::uint64_t(t[1]) << 8 | std::uint64_t(t[2]) << 16
            | std::uint64_t(t[3]) << 24;
  }
  guess = std::min<std::uint64_t>(guess, max_deflate_ratio * packed.size());
  return static_cast<std::size_t>(std::max<std::uint64_t>(guess, 64)) + 1;
}

bool gzip_magic_at(const std::vector<std::uint8_t>& bytes, std::size_t at) {
  return bytes.size() >= at + 2 && bytes[at] == 0x1f && bytes[at + 1] == 0x8b;
}

} // namespace

void for_each_text_line(const std::string& path, const std::string& what,
                        const std::function<void(std::int64_t, const std::string&)>& on_line) {
  std::ifstream in(path);
  if (!in)
    throw io_error(path + ": cannot open " + what + ": " + std::strerror(errno));
  std::string line;
  for (std::int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (!line.empty())
      on_line(number, line);
  }
  if (in.bad())
    throw io_error(path + ": read failed");
}

std::vector<std::uint8_t> read_raw_file(const std::string& path) {
  std::unique_ptr<std::FILE, file_closer> file(std::fopen(path.c_str(), "rb"));
  if (!file)
    throw io_error(path + ": cannot open: " + std::strerror(errno));
  struct stat info {};
  std::size_t capacity = 1 << 16;
  if (fstat(fileno(file.get()), &info) == 0 && S_ISREG(info.st_mode))
    capacity = static_cast<std::size_t>(info.st_size) + 1; // +1 so EOF shows on first read
  std::vector<std::uint8_t> bytes(capacity);
  std::size_t used = 0;
  for (;;) {
    used += std::fread(bytes.data() + used, 1, bytes.size() - used, file.get());
    if (std::ferror(file.get()))
      throw io_error(path + ": read failed: " + std::strerror(errno));
    if (used < bytes.size())
      break;
    bytes.resize(bytes.size() * 2); // the file grew, or it is not a regular file
  }
  bytes.resize(used);
  return bytes;
}

bool is_gzip(const std::vector<std::uint8_t>& bytes) {
  return gzip_magic_at(bytes, 0);
}

std::vector<std::uint8_t> gunzip(const std::string& path, const std::vector<std::uint8_t>& packed) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) // 16: expect a gzip wrapper
    throw io_error(path + ": cannot start zlib inflate");
  std::unique_ptr<z_stream, int (*)(z_streamp)> guard(&stream, inflateEnd);

  std::vector<std::uint8_t> out(initial_output_size(packed));
  std::size_t in_pos = 0, out_pos = 0;
  for (;;) {
    if (out_pos == out.size())
      out.resize(out.size() + std::max<std::size_t>(out.size() / 2, 1 << 16));
    const auto in_chunk = std::min<std::size_t>(packed.size() - in_pos, UINT_MAX);
    const auto out_chunk = std::min<std::size_t>(out.size() - out_pos, UINT_MAX);
    // zlib's API predates const; inflate never writes through next_in.
    stream.next_in = const_cast<Bytef*>(packed.data() + in_pos);
    stream.avail_in = static_cast<uInt>(in_chunk);
    stream.next_out = out.data() + out_pos;
    stream.avail_out = static_cast<uInt>(out_chunk);
    const int status = inflate(&stream, Z_NO_FLUSH);
    in_pos += in_chunk - stream.avail_in;
    out_pos += out_chunk - stream.avail_out;

    if (status == Z_STREAM_END) {
      if (in_pos == packed.size())
        break;
      if (!gzip_magic_at(packed, in_pos))
        throw io_error(path + ": trailing garbage: " + std::to_string(packed.size() - in_pos)
                       + " bytes after the end of the gzip stream");
      inflateReset(&stream); // another gzip member follows, as `cat a.gz b.gz` makes
      continue;
    }
    if (status == Z_OK || (status == Z_BUF_ERROR && stream.avail_out == 0))
      continue;
    if (status == Z_BUF_ERROR)
      throw io_error(path + ": corrupt gzip stream: compressed data ends early after "
                     + std::to_string(packed.size()) + " bytes (truncated file?)");
    throw io_error(path + ": corrupt gzip stream: "
                   + (stream.msg ? std::string(stream.msg) : std::string(zError(status))));
  }
  out.resize(out_pos);
  return out;
}

std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  auto bytes = read_raw_file(path);
  if (is_gzip(bytes))
    return gunzip(path, bytes);
  return bytes;
}

} // namespace troupe
