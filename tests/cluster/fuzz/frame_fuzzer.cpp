// libFuzzer target for the frame decoder: the input is what a peer could put on a connection
// (an 8-byte header, then a payload). The header is checked as a channel checks it; whatever
// passes is decoded against a fixed two-shard key table, and every tensor of an accepted push
// or weight set is read to its last element, so AddressSanitizer sees any view that reaches
// past the payload. Built and run for a bounded time by scripts/fuzz_frames.sh (ctest
// cluster:fuzz_frames); seeds in corpus/ are frames of every kind, written by make_seeds.cpp
// (cluster:fuzz_seeds_current checks that this build decodes them).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <variant>
#include <vector>

#include <troupe/cluster/frame_codec.hpp>

namespace {

const troupe::wire_keys& keys() {
  static const troupe::wire_keys table{{{{2, 3}, {5}}, {{4}}}};
  return table;
}

float touch(const std::vector<troupe::tensor>& values) {
  float sum = 0;
  for (const auto& t : values)
    for (std::int64_t i = 0; i < t.numel(); ++i)
      sum += t.data()[i];
  return sum;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < troupe::frame_header_bytes)
    return 0;
  const auto header = troupe::read_frame_header(reinterpret_cast<const char*>(data), 1 << 20);
  if (!header.error.empty())
    return 0;
  // A channel reads exactly the announced length; a short input is a truncated frame.
  const std::size_t available = size - troupe::frame_header_bytes;
  const std::size_t length = std::min(header.payload_bytes, available - available % 8);
  auto payload = std::make_shared<std::vector<char>>(length);
  if (length > 0)
    std::memcpy(payload->data(), data + troupe::frame_header_bytes, length);
  auto result = troupe::decode_payload(payload, keys());
  volatile float sink = 0;
  if (auto* push = std::get_if<troupe::push_message>(&result.message); push && result.ok())
    sink = touch(push->push.gradients);
  if (auto* weights = std::get_if<troupe::weights_message>(&result.message); weights && result.ok())
    sink = touch(weights->weights.weights);
  (void)sink;
  return 0;
}
