// The safetensors file format (Hugging Face's, https://github.com/huggingface/safetensors),
// float32 tensors only: what Troupe writes its checkpoints in, so that PyTorch or NumPy can
// read the weights without Troupe (scripts/load_checkpoint.py).
//
//   8 bytes   N, unsigned little-endian: the header's length
//   N bytes   a JSON object, UTF-8, starting with '{' and padded with spaces (0x20):
//             {"__metadata__": {"key": "value", ...},
//              "conv1.weight": {"dtype": "F32", "shape": [20, 1, 5, 5], "data_offsets": [0, 2000]},
//              ...}
//   the rest  the byte buffer: each tensor's values, row-major, little-endian, at
//             [begin, end) of its data_offsets (relative to the buffer's first byte)
//
// The writer pads the header so the buffer starts at a multiple of 8 bytes, and packs the
// tensors in the order given, so every float32 is aligned. The reader holds a file to the
// format's rules: the header at most 100 MB and inside the file, names unique, `__metadata__`
// a map of strings to strings, each tensor's byte range exactly its shape's size, and the
// ranges covering the buffer without holes or overlaps. dtypes other than F32 are refused.
// The bytes are read on a little-endian host as they are.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <troupe/kernels/tensor.hpp>

namespace troupe {

struct named_tensor {
  std::string name;
  tensor value; ///< float32, on the CPU
};

struct safetensors_content {
  std::vector<named_tensor> tensors; ///< in buffer order
  std::map<std::string, std::string> metadata;
};

/// The file's bytes. Throws std::invalid_argument for an empty or repeated name, the name
/// `__metadata__`, or a tensor that is not a float32 CPU tensor.
std::vector<std::uint8_t> encode_safetensors(const safetensors_content& content);

/// Reads a file's bytes; `source` (the path) starts every io_error message, which says what
/// is wrong ("header of 120 bytes runs past the end of the 64-byte file", "tensor
/// 'fc1.weight' has dtype F16", ...).
safetensors_content decode_safetensors(const std::string& source,
                                       const std::vector<std::uint8_t>& bytes);

/// The largest header the reader accepts (the reference implementation's limit).
constexpr std::uint64_t safetensors_max_header = 100'000'000;

} // namespace troupe
