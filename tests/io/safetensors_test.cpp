// Tests for io/safetensors.cpp: the bytes the writer produces, byte for byte where the format
// fixes them, and a reader that refuses every way a header or buffer can be wrong.
#include <troupe/io/safetensors.hpp>

#include <cstring>

#include <catch2/catch.hpp>

#include <troupe/io/dataset.hpp>

using namespace troupe;
using Catch::Contains;

namespace {

using bytes = std::vector<std::uint8_t>;

std::uint64_t header_length(const bytes& file) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | file[static_cast<std::size_t>(i)];
  return n;
}

// A file with the given header text (padded as written) and buffer.
bytes file_of(const std::string& header, const bytes& buffer) {
  bytes out(8);
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] =
      static_cast<std::uint8_t>(std::uint64_t(header.size()) >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), buffer.begin(), buffer.end());
  return out;
}

safetensors_content sample() {
  safetensors_content c;
  c.tensors.push_back({"fc1.weight", tensor::from_values({2, 3}, {1, 2, 3, 4, 5, 6})});
  c.tensors.push_back({"fc1.bias", tensor::from_values({2}, {-1.5f, 0.25f})});
  c.metadata["epoch"] = "3";
  c.metadata["note"] = "quote \" and\nnewline";
  return c;
}

} // namespace

TEST_CASE("the writer lays out header and buffer as the format says", "[io][safetensors]") {
  const auto file = encode_safetensors(sample());
  const auto n = header_length(file);
  CHECK((8 + n) % 8 == 0); // the buffer starts aligned
  const std::string header(file.begin() + 8, file.begin() + 8 + static_cast<long>(n));
  CHECK(header.front() == '{');
  CHECK(header.find("\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}")
        != std::string::npos);
  CHECK(header.find("\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]}")
        != std::string::npos);
  CHECK(header.find("\"__metadata__\":{\"epoch\":\"3\"") != std::string::npos);
  CHECK(header.find_last_not_of(' ') < header.size());
  REQUIRE(file.size() == 8 + n + 32);
  float first, last;
  std::memcpy(&first, file.data() + 8 + n, 4);
  std::memcpy(&last, file.data() + 8 + n + 28, 4);
  CHECK(first == 1.0f);
  CHECK(last == 0.25f);
}

TEST_CASE("what the writer writes the reader reads back exactly", "[io][safetensors]") {
  const auto original = sample();
  const auto back = decode_safetensors("mem", encode_safetensors(original));
  CHECK(back.metadata == original.metadata);
  REQUIRE(back.tensors.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(back.tensors[i].name == original.tensors[i].name);
    CHECK(back.tensors[i].value.shape() == original.tensors[i].value.shape());
    CHECK(std::memcmp(back.tensors[i].value.data(), original.tensors[i].value.data(),
                      original.tensors[i].value.bytes())
          == 0);
  }
}

TEST_CASE("a file written by another writer reads: spaces, order, empty tensors",
          "[io][safetensors]") {
  bytes buffer(8, 0);
  const float v = 2.5f;
  std::memcpy(buffer.data() + 4, &v, 4);
  const std::string header = R"({ "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
    "a": {"dtype": "F32", "shape": [1, 1], "data_offsets": [0, 4]},
    "e": {"dtype": "F32", "shape": [0, 3], "data_offsets": [8, 8]} }   )";
  const auto c = decode_safetensors("f", file_of(header, buffer));
  REQUIRE(c.tensors.size() == 3);
  CHECK(c.tensors[0].value.data()[0] == 2.5f);
  CHECK(c.tensors[2].value.numel() == 0);
  CHECK(c.metadata.empty());
}

TEST_CASE("the reader refuses malformed files naming the file and the fault", "[io][safetensors]") {
  const bytes four(4, 0);
  auto refused = [](const bytes& file, const std::string& what) {
    CHECK_THROWS_WITH(decode_safetensors("ckpt.safetensors", file),
                      Contains("ckpt.safetensors: ") && Contains(what));
  };
  refused(bytes(5, 0), "too short");
  auto good = encode_safetensors(sample());
  refused(bytes(good.begin(), good.begin() + 40), "runs past the end");
  refused(bytes(good.begin(), good.end() - 4), "outside the 28-byte buffer");
  refused(file_of("[1]", {}), "does not start with '{'");
  refused(file_of("{\"a\":", {}), "malformed");
  refused(file_of(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", four), "dtype F16");
  refused(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", four),
          "4 bytes for shape [2]");
  refused(
    file_of(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
      four),
    "duplicate key");
  refused(
    file_of(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
      bytes(8, 0)),
    "overlaps");
  refused(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", bytes(8, 0)),
          "a hole before it");
  refused(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", bytes(8, 0)),
          "cover 4 of the buffer's 8");
  refused(file_of(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", four),
          "not a non-negative integer");
  refused(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", four),
          "unknown field 'x'");
  refused(file_of(R"({"__metadata__":{"k":1}})", {}), "is not a string");
}

TEST_CASE("the writer refuses names the format cannot hold", "[io][safetensors]") {
  safetensors_content c;
  c.tensors.push_back({"__metadata__", tensor({1})});
  CHECK_THROWS_WITH(encode_safetensors(c), Contains("may not be named"));
  c.tensors = {{"a", tensor({1})}, {"a", tensor({1})}};
  CHECK_THROWS_WITH(encode_safetensors(c), Contains("appears twice"));
}
