// Buffers are copied both ways: batch norm updates its running statistics in place, so a
// handle would not stay a snapshot, and a restored replica must not share storage with the
// checkpoint it came from.
#include <troupe/graph/model_state.hpp>

#include <stdexcept>

namespace troupe {

replica_state capture_replica_state(model& replica) {
  replica_state out;
  out.streams = replica.stream_positions(); // first: it refuses a model on a GPU
  for (const buffer* b : replica.buffers())
    out.buffers.push_back({b->name, b->value.clone()});
  return out;
}

void restore_replica_state(model& replica, const replica_state& state) {
  auto& buffers = replica.buffers();
  if (state.buffers.size() != buffers.size())
    throw std::invalid_argument("model '" + replica.name() + "' has "
                                + std::to_string(buffers.size()) + " buffers, the saved state "
                                + std::to_string(state.buffers.size()));
  for (std::size_t i = 0; i < buffers.size(); ++i)
    if (state.buffers[i].name != buffers[i]->name
        || state.buffers[i].value.shape() != buffers[i]->value.shape())
      throw std::invalid_argument("model '" + replica.name() + "': buffer " + buffers[i]->name + " "
                                  + shape_string(buffers[i]->value.shape())
                                  + " does not match the saved " + state.buffers[i].name + " "
                                  + shape_string(state.buffers[i].value.shape()));
  replica.seek_streams(state.streams); // checks every name before it moves any stream
  for (std::size_t i = 0; i < buffers.size(); ++i)
    buffers[i]->value = state.buffers[i].value.clone();
}

} // namespace troupe
