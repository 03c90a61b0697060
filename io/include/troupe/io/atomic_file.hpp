// Replacing a file so that a crash at any moment leaves either the old file or the whole new
// one, never a torn mix: the bytes go to a temporary file in the same directory (rename is
// atomic only within one file system), which is flushed to the disk (fsync) and renamed over
// the target; then the directory itself is fsynced, so the rename survives a power loss.
// A failure removes the temporary file and throws io_error naming the path and the step.
//
// Thread-safety: concurrent calls for different paths are independent; for one path, the
// last rename wins.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

/// Writes `bytes` to `path` atomically as described above. The temporary file is
/// `path` + ".tmp." + the process id, created exclusively. A non-empty `displaced` is removed
/// (when it exists) once the new bytes are durable and just before the rename: a file that
/// must not stand beside `path` (the other kind of checkpoint of the same epoch).
void write_file_atomically(const std::string& path, const std::vector<std::uint8_t>& bytes,
                           const std::string& displaced = {});

/// Checks, before a long run, that write_file_atomically(path, ...) will be able to create its
/// temporary file: creates that file exclusively and removes it again. Permission bits alone
/// cannot tell (root ignores them, /proc refuses root), so the check is the creation itself.
/// Throws io_error "<directory>: cannot create files in it: <strerror>".
void check_can_create(const std::string& path);

} // namespace troupe
