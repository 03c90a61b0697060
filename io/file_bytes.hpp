// Whole-file reads for the dataset readers, with transparent gzip decompression.
//
// The datasets we read are small enough to hold in memory, and parsing a buffer is simpler and
// gives better error messages (exact byte counts) than parsing a stream. Gzip is recognised by
// its magic bytes (1f 8b), not by the file name, so a renamed file still reads correctly.
// Every failure is an io_error whose message starts with the path.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <troupe/io/dataset.hpp>

namespace troupe {

/// Calls on_line(number, line) for each non-blank line of a text file (numbers from 1, a
/// trailing '\r' removed). Throws io_error "<path>: cannot open <what>: <strerror>" or
/// "<path>: read failed"; whatever on_line throws passes through.
void for_each_text_line(const std::string& path, const std::string& what,
                        const std::function<void(std::int64_t, const std::string&)>& on_line);

/// Reads the file as stored. Throws io_error "<path>: cannot open: <strerror>" and the like.
std::vector<std::uint8_t> read_raw_file(const std::string& path);

/// True when `bytes` starts with the gzip magic 1f 8b.
bool is_gzip(const std::vector<std::uint8_t>& bytes);

/// Inflates a gzip file's bytes (concatenated members allowed). `path` names the source in
/// errors: "<path>: corrupt gzip stream: ..." or a truncation / trailing-garbage message.
std::vector<std::uint8_t> gunzip(const std::string& path, const std::vector<std::uint8_t>& packed);

/// Reads a file and inflates it when it is gzip-compressed.
std::vector<std::uint8_t> read_file_bytes(const std::string& path);

} // namespace troupe
