// A checkpoint's save on the run's timeline (troupe/io/timeline.hpp): on the track
// "checkpoint", the `save` from the request to its file written, with the `write` inside.
// Private to actors/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <troupe/io/timeline.hpp>

namespace troupe {

/// From `asked` to now, its write from `writing` (args.detail: `file`). Nothing without a
/// timeline.
inline void record_save(const std::shared_ptr<timeline_recorder>& to, std::int64_t epoch,
                        timeline_recorder::clock::time_point asked,
                        timeline_recorder::clock::time_point writing, const std::string& file) {
  if (!to)
    return;
  const auto track = to->track("checkpoint");
  const auto done = timeline_recorder::clock::now();
  to->complete(track, "save", asked, done, {{"epoch", epoch}});
  to->complete(track, "write", writing, done, {{"epoch", epoch}}, file);
}

} // namespace troupe
