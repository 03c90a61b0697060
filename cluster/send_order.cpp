// See send_order.hpp.
#include "cluster/send_order.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace troupe {

void send_order::set_sequence(std::vector<std::uint64_t> ranks,
                              std::chrono::milliseconds patience) {
  std::map<std::uint64_t, std::size_t> places;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (!places.emplace(ranks[i], i).second)
      throw std::invalid_argument("a push sequence lists rank " + std::to_string(ranks[i])
                                  + " twice");
  sequence_ = std::move(ranks);
  place_in_sequence_ = std::move(places);
  taken_in_cycle_.assign(sequence_.size(), false);
  next_place_ = 0;
  patience_ = patience;
}

void send_order::queue(encoded_frame frame, std::uint64_t rank, bool sequenced,
                       clock::time_point now) {
  if (sequenced && order_ == write_order::by_rank && place_in_sequence_.count(rank) != 0) {
    if (sequenced_.empty()) // the first push of a step: the patience counts from here
      awaited_since_ = now;
    sequenced_.emplace(rank, std::move(frame));
    return;
  }
  // A multimap inserts at the end of its equal range: equal ranks keep their queuing order, and
  // under fifo every frame has the same rank.
  queue_.emplace(order_ == write_order::by_rank ? rank : 0, std::move(frame));
}

// The sequenced push that may go now: the sequence's next, else one of a rank this cycle has
// taken (a second source's).
send_order::ranked_frames::const_iterator send_order::next_sequenced() const {
  if (sequenced_.empty())
    return sequenced_.end();
  auto next = sequenced_.find(sequence_[next_place_]);
  if (next != sequenced_.end())
    return next;
  for (auto it = sequenced_.begin(); it != sequenced_.end(); ++it)
    if (taken_in_cycle_[place_in_sequence_.at(it->first)])
      return it;
  return sequenced_.end();
}

send_order::ranked_frames::iterator send_order::next_sequenced() {
  const auto found = static_cast<const send_order&>(*this).next_sequenced();
  return sequenced_.erase(found, found); // the same position, as a mutable iterator
}

bool send_order::ready() const {
  return !queue_.empty() || next_sequenced() != sequenced_.end();
}

std::optional<send_order::clock::time_point> send_order::patience_ends() const {
  if (sequenced_.empty() || ready())
    return std::nullopt;
  return awaited_since_ + patience_;
}

std::optional<std::uint64_t> send_order::give_up_waiting(clock::time_point now) {
  const auto ends = patience_ends();
  if (!ends || now < *ends)
    return std::nullopt;
  // Every place before the awaited one this cycle has taken: the awaited one and those after it
  // without a waiting push count as taken, up to the first that has one (or the cycle's last).
  std::size_t place = next_place_;
  const auto awaited = sequence_[place];
  while (place + 1 < sequence_.size() && sequenced_.count(sequence_[place]) == 0)
    taken_in_cycle_[place++] = true;
  next_place_ = place;
  ++skips_;
  return awaited;
}

// Moves the sequence on past a push taken from sequenced_ (a second source's leaves it where it
// is); `it` stays valid (the caller erases it).
void send_order::take_sequenced(ranked_frames::iterator it, clock::time_point now) {
  const auto place = place_in_sequence_.at(it->first);
  if (taken_in_cycle_[place])
    return;
  taken_in_cycle_[place] = true;
  next_place_ = place + 1;
  while (next_place_ < sequence_.size() && taken_in_cycle_[next_place_])
    ++next_place_;
  if (next_place_ >= sequence_.size()) { // the cycle is complete: the next step's begins
    taken_in_cycle_.assign(sequence_.size(), false);
    next_place_ = 0;
  }
  awaited_since_ = now;
}

void send_order::take_batch(std::vector<encoded_frame>& batch, clock::time_point now) {
  const auto first_taken = batch.size();
  std::size_t bytes = 0;
  for (;;) {
    auto first = queue_.begin();
    const bool sequenced = first == queue_.end();
    if (sequenced && (first = next_sequenced()) == sequenced_.end())
      return;
    if (order_ == write_order::by_rank && batch.size() > first_taken
        && bytes + first->second.bytes() > ranked_batch_bytes)
      return;
    bytes += first->second.bytes();
    batch.push_back(std::move(first->second));
    if (sequenced) {
      take_sequenced(first, now);
      sequenced_.erase(first);
    } else {
      queue_.erase(first);
    }
  }
}

std::vector<encoded_frame> send_order::drop_all() {
  std::vector<encoded_frame> dropped;
  dropped.reserve(queue_.size() + sequenced_.size());
  for (auto* frames : {&queue_, &sequenced_}) {
    for (auto& [rank, frame] : *frames)
      dropped.push_back(std::move(frame));
    frames->clear();
  }
  return dropped;
}

} // namespace troupe
