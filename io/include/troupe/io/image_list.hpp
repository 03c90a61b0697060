// Image lists in MXNet's `.lst` format, the input of im2rec: one image a line,
//
//   index <TAB> label [<TAB> label ...] <TAB> path relative to the image root
//
// labels written as "%f" (6 decimals), as MXNet's tools/im2rec.py writes them. A folder of
// class sub-folders lists as im2rec.py --list does: sub-folders in sorted name order are
// classes 0, 1, 2, ...; their JPEG files (.jpg / .jpeg, any case) in sorted name order, indices
// counting up from 0 over the whole list. Files directly in the root and deeper folders are
// not listed.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct image_list_entry {
  std::uint64_t index = 0;
  std::vector<float> labels; ///< at least one
  std::string path;          ///< relative to the image root
};

/// Lists `root`'s class sub-folders. Throws io_error naming the root when it is not a
/// directory, has no sub-folder, or holds no JPEG at all.
std::vector<image_list_entry> list_image_folder(const std::string& root);

/// Reads a `.lst`. Throws io_error "<path>: line N: ..." for a line without index, label and
/// path, or with an index or label that is not a number.
std::vector<image_list_entry> read_image_list(const std::string& path);

/// Writes a `.lst`. Throws io_error when the file cannot be written.
void write_image_list(const std::string& path, const std::vector<image_list_entry>& entries);

} // namespace troupe
