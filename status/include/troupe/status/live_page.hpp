// The live page the status server's / answers: one HTML document with its styles and script
// inside (status/live_page.html, embedded when Troupe is built), which loads nothing from
// elsewhere and draws /status every second: the actor graph, each node's state, progress and
// throughput, the loss and accuracy curves, the epoch's straggler, warnings and faults.
//
// Thread-safety: a constant.
#pragma once

#include <string>

namespace troupe {

const std::string& live_page();

} // namespace troupe
