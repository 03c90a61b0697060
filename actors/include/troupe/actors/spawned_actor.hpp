// The one place a typed handle becomes an untyped one. What a node spawned is one list of
// actors of every interface (node_part::spawned, the push side's observer), which a node
// monitors and ends: only an untyped handle holds any of them. Through it pass exit and down
// messages, never a request, so no interface goes unchecked.
//
// Thread-safety: plain functions.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>

namespace troupe {

/// `handle` as one entry of a list of spawned actors.
template <class Handle> caf::actor as_spawned(const Handle& handle) {
  return caf::actor_cast<caf::actor>(handle);
}

} // namespace troupe
