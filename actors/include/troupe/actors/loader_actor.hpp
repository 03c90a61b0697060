// The data loader actor: serves the batches of one batch_source, one epoch at a time, and
// builds the next few batches ahead of demand so decoding and augmentation overlap compute.
//
// Protocol: loader_actor
//   (epoch_atom, int64 epoch)  -> ()           start serving `epoch` from its first batch; what
//                                              was prefetched for another epoch is dropped
//   (next_atom)                -> loader_item  the next batch of the epoch, or {end = true}
//                                              once the epoch is exhausted (repeatable)
//   internal (fill_atom, to itself only; not part of loader_actor) builds one batch ahead,
//                                              then re-arms itself
//
// Prefetch: after each served batch the actor keeps up to `prefetch_depth` built batches. The
// building runs on the loader's own scheduler thread while the compute actor runs its step on
// another, which is the overlap. A `next` that finds the queue empty is answered as soon as
// the batch it waits for is built (a response promise), never with a blocking wait. A batch
// that cannot be built (a corrupt record) answers every waiting asker, and every later `next`,
// with errc::bad_data naming the record; the loader stays up and builds nothing more. Quitting
// instead would race: a compute asking just after would get CAF's request_receiver_down, not
// the reason, whenever its request beat the loader's down message.
#pragma once

#include <memory>

#include <caf/actor_system.hpp>

#include <troupe/actors/messages.hpp>
#include <troupe/io/batch_source.hpp>

namespace troupe {

using loader_actor = caf::typed_actor<caf::reacts_to<epoch_atom, std::int64_t>,
                                      caf::replies_to<next_atom>::with<loader_item>>;

struct loader_options {
  int prefetch_depth = 3;
  /// Serve at most this many batches per epoch (0: all). Synchronous topologies set it to the
  /// smallest part's count so every worker takes the same number of steps.
  std::int64_t max_batches_per_epoch = 0;
};

loader_actor spawn_loader(caf::actor_system& system, std::shared_ptr<const batch_source> source,
                          loader_options options = {});

} // namespace troupe
