// Writer and reader of safetensors files (see safetensors.hpp for the layout). The reader
// trusts no number from the file: every length and offset is checked against the file's size
// and against the others before a byte of tensor data is copied.
#include <troupe/io/safetensors.hpp>

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

#include <troupe/io/dataset.hpp>

#include "io/strict_json.hpp"

namespace troupe {

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error                                                                                             \
  "safetensors.cpp copies little-endian float32 bytes as they are: a big-endian host needs byte swaps"
#endif

namespace {

constexpr std::size_t buffer_alignment = 8;

// The header as safetensors writers lay it out: __metadata__ first, then the tensors in their
// order, compact, padded with spaces so the buffer starts 8-byte aligned. Names that are not
// valid UTF-8 are written with U+FFFD in place of the bad bytes rather than as invalid JSON.
std::string header_json(const safetensors_content& content) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!content.metadata.empty())
    h["__metadata__"] = content.metadata;
  std::uint64_t offset = 0;
  for (const auto& t : content.tensors) {
    const auto end = offset + t.value.bytes();
    h[t.name] = {{"dtype", "F32"}, {"shape", t.value.shape()}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  auto text = h.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  while ((8 + text.size()) % buffer_alignment != 0)
    text += ' ';
  return text;
}

void check_encodable(const safetensors_content& content) {
  std::set<std::string> names;
  for (const auto& t : content.tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      throw std::invalid_argument("safetensors: a tensor may not be named '" + t.name + "'");
    if (!names.insert(t.name).second)
      throw std::invalid_argument("safetensors: tensor name '" + t.name + "' appears twice");
    if (t.value.type() != dtype::f32 || t.value.device() != device_kind::cpu)
      throw std::invalid_argument("safetensors: tensor '" + t.name
                                  + "' is not a float32 CPU tensor");
  }
}

// One header entry, checked; `buffer` is the byte buffer's size.
struct entry {
  std::string name;
  shape_t shape;
  std::uint64_t begin = 0, end = 0;
};

entry read_entry(const std::string& source, const std::string& name,
                 const nlohmann::ordered_json& v, std::uint64_t buffer) {
  auto bad = [&](const std::string& what) -> io_error {
    return io_error(source + ": tensor '" + name + "' " + what);
  };
  if (!v.is_object())
    throw bad("is not described by an object");
  for (const auto& [key, value] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      throw bad("has an unknown field '" + key + "'");
  if (!v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    throw bad("lacks dtype, shape or data_offsets");
  const auto& dtype = v["dtype"];
  const auto& shape = v["shape"];
  const auto& offsets = v["data_offsets"];
  if (!dtype.is_string() || dtype.get<std::string>() != "F32")
    throw bad("has dtype " + (dtype.is_string() ? dtype.get<std::string>() : "(not a string)")
              + "; Troupe reads F32 only");
  if (!shape.is_array() || !offsets.is_array() || offsets.size() != 2)
    throw bad("has a malformed shape or data_offsets");
  entry e{name, {}, 0, 0};
  std::uint64_t elements = 1;
  try {
    for (const auto& extent : shape) {
      const auto d = json_unsigned(extent, "an extent");
      if (d != 0 && elements > (std::uint64_t{1} << 60) / d)
        throw std::invalid_argument("the shape's size overflows");
      elements *= d;
      e.shape.push_back(static_cast<std::int64_t>(d));
    }
    e.begin = json_unsigned(offsets[0], "the first data offset");
    e.end = json_unsigned(offsets[1], "the second data offset");
  } catch (const std::invalid_argument& error) {
    throw bad(std::string("has a bad shape or offset: ") + error.what());
  }
  if (e.begin > e.end || e.end > buffer)
    throw bad("has data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end)
              + "] outside the " + std::to_string(buffer) + "-byte buffer (truncated?)");
  if (e.end - e.begin != elements * 4)
    throw bad("has " + std::to_string(e.end - e.begin) + " bytes for shape " + shape_string(e.shape)
              + " (" + std::to_string(elements * 4) + " expected)");
  return e;
}

// The ranges, sorted, must tile [0, buffer) exactly.
void check_coverage(const std::string& source, std::vector<entry> entries, std::uint64_t buffer) {
  std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  std::uint64_t at = 0;
  for (const auto& e : entries) {
    if (e.begin != at)
      throw io_error(source + ": tensor '" + e.name + "' starts at byte " + std::to_string(e.begin)
                     + " of the buffer, expected " + std::to_string(at)
                     + (e.begin < at ? " (it overlaps another)" : " (a hole before it)"));
    at = e.end;
  }
  if (at != buffer)
    throw io_error(source + ": the tensors cover " + std::to_string(at) + " of the buffer's "
                   + std::to_string(buffer) + " bytes");
}

void read_metadata(const std::string& source, const nlohmann::ordered_json& v,
                   safetensors_content& out) {
  if (!v.is_object())
    throw io_error(source + ": __metadata__ is not an object");
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string())
      throw io_error(source + ": __metadata__ value of '" + key + "' is not a string");
    out.metadata[key] = value.get<std::string>();
  }
}

} // namespace

std::vector<std::uint8_t> encode_safetensors(const safetensors_content& content) {
  check_encodable(content);
  const auto header = header_json(content);
  std::size_t data = 0;
  for (const auto& t : content.tensors)
    data += t.value.bytes();
  std::vector<std::uint8_t> out(8 + header.size() + data);
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  auto* at = out.data() + 8 + header.size();
  for (const auto& t : content.tensors) {
    if (t.value.bytes() > 0)
      std::memcpy(at, t.value.data(), t.value.bytes());
    at += t.value.bytes();
  }
  return out;
}

safetensors_content decode_safetensors(const std::string& source,
                                       const std::vector<std::uint8_t>& bytes) {
  if (bytes.size() < 8)
    throw io_error(source + ": " + std::to_string(bytes.size())
                   + " bytes, too short for a safetensors file (truncated?)");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | bytes[static_cast<std::size_t>(i)];
  if (n > safetensors_max_header || n > bytes.size() - 8)
    throw io_error(source + ": header of " + std::to_string(n) + " bytes runs past the end of the "
                   + std::to_string(bytes.size()) + "-byte file (truncated or not safetensors)");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, n);
  if (text.empty() || text[0] != '{')
    throw io_error(source + ": the header does not start with '{' (not a safetensors file)");
  nlohmann::ordered_json header;
  try {
    header = parse_strict_json(text);
  } catch (const std::invalid_argument& e) {
    throw io_error(source + ": the JSON header is malformed " + e.what());
  }
  const std::uint64_t buffer = bytes.size() - 8 - n;
  safetensors_content out;
  std::vector<entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__")
      read_metadata(source, value, out);
    else
      entries.push_back(read_entry(source, name, value, buffer));
  }
  check_coverage(source, entries, buffer);
  const auto* data = bytes.data() + 8 + n;
  for (const auto& e : entries) {
    auto t = tensor::uninitialized(e.shape);
    if (e.end > e.begin)
      std::memcpy(t.data(), data + e.begin, e.end - e.begin);
    out.tensors.push_back({e.name, std::move(t)});
  }
  return out;
}

} // namespace troupe
