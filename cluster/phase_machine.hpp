// A node's state machine as types: its phase is one of `Phases`, each a struct holding only
// what that phase needs, so a field that means nothing in a phase cannot be reached there
// (as<P>() is null outside P). Every move goes through enter(), which checks it against the
// machine's one table of edges (from, to, the event that moves it): a move the table does not
// list is a defect of the node's code, never bad input, and throws std::logic_error naming
// both phases. The table is also what docs/architecture.md draws (a test compares the two).
//
// Each phase struct names itself: `static constexpr const char* name`.
//
// Thread-safety: none; a node's actor owns its machine.
//
// Private to the cluster layer.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace troupe {

/// One move a machine may make: from phase `from` to phase `to` on `event` (a phrase, for the
/// drawing and the error).
struct phase_edge {
  const char* from;
  const char* to;
  const char* event;
};

template <class... Phases> class phase_machine {
public:
  /// Starts in the first of `Phases`; `edges` outlives the machine.
  explicit phase_machine(const std::vector<phase_edge>& edges) : edges_(&edges) {}

  template <class P> bool is() const { return std::holds_alternative<P>(now_); }
  /// The phase's own state while the machine is in P, else null.
  template <class P> P* as() { return std::get_if<P>(&now_); }
  template <class P> const P* as() const { return std::get_if<P>(&now_); }
  /// The phase the machine is in, by its name.
  const char* name() const {
    return std::visit([](const auto& p) { return std::decay_t<decltype(p)>::name; }, now_);
  }
  /// Moves to `next`; throws std::logic_error when the table has no edge from here to there.
  template <class P> P& enter(P next) {
    if (!allows(name(), P::name))
      throw std::logic_error(std::string("a node moved from phase ") + name() + " to " + P::name
                             + ", which its table of phases does not allow");
    return now_.template emplace<P>(std::move(next));
  }
  /// Whether the table lists a move from phase `from` to phase `to`.
  bool allows(const char* from, const char* to) const {
    for (const auto& e : *edges_)
      if (std::strcmp(e.from, from) == 0 && std::strcmp(e.to, to) == 0)
        return true;
    return false;
  }
  /// Every phase's name, in the order of `Phases`.
  static std::vector<const char*> phase_names() { return {Phases::name...}; }

private:
  std::variant<Phases...> now_;
  const std::vector<phase_edge>* edges_;
};

} // namespace troupe
