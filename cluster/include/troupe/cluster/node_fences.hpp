// The terms of one node: the one its frames carry (wire.capnp's Frame.term), and the ones it
// takes nothing from. The scheduler gives each member process a term with its assignment,
// unique in the run; when it declares a process lost it fences that term and tells every other
// member (fence_message), before any of the lost part moves (a promotion, an adoption). A
// frozen process that runs again after that still sends frames of its old term: every channel
// refuses them, tells it so (a goodbye with `fenced`) and ends, so nothing it applied or
// answered after its loss reaches the run, and it ends itself (fenced_error).
//
// Thread-safety: every member function is thread-safe (the node's channels share one).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <troupe/actors/actor_errors.hpp>

namespace troupe {

class node_fences {
public:
  /// The term this node's frames carry from now on (its assignment's); 0: none.
  void set_own(std::uint64_t term) { own_.store(term, std::memory_order_relaxed); }
  std::uint64_t own() const { return own_.load(std::memory_order_relaxed); }

  /// Takes nothing of `term` from now on; `why` says what the scheduler saw. False if `term`
  /// was fenced already, or is 0 (no term: never fenced).
  bool fence(std::uint64_t term, const std::string& why);
  /// Why `term` is fenced, or none.
  std::optional<std::string> fenced(std::uint64_t term) const;

  /// This node's own term was fenced, as a peer said (`why`): it takes no further part.
  void note_fenced_here(const std::string& why);
  std::optional<std::string> fenced_here() const;

private:
  std::atomic<std::uint64_t> own_{0};
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::string> fenced_;
  std::optional<std::string> fenced_here_;
};

/// A member ends because it was fenced: declared lost while it could not answer (frozen, cut
/// off), its part run by others since. `troupe node` exits with fenced_exit_status, which
/// `troupe launch` takes as the loss it was, not as a failure of the run.
struct fenced_error : troupe_error {
  explicit fenced_error(const std::string& why) : troupe_error(errc::peer_down, why) {}
};
constexpr int fenced_exit_status = 3;

} // namespace troupe
