#include <troupe/cluster/metrics_relay.hpp>

#include <caf/all.hpp>

namespace troupe {

namespace {

struct metrics_relay_state {
  metrics_sink_actor target;
  std::int64_t dropped = 0; // since it last pointed nowhere
  std::function<void(std::int64_t)> say_dropped;
  static inline const char* name = "metrics_relay";
};

using relay_pointer = metrics_relay_actor::stateful_pointer<metrics_relay_state>;

template <class Report> void pass_on(relay_pointer self, Report& report) {
  auto& st = self->state;
  if (st.target)
    self->send(st.target, std::move(report));
  else
    ++st.dropped;
}

metrics_relay_actor::behavior_type metrics_relay(relay_pointer self, metrics_sink_actor target,
                                                 std::function<void(std::int64_t)> dropped) {
  self->state.target = std::move(target);
  self->state.say_dropped = std::move(dropped);
  return {
    [=](batch_report& report) { pass_on(self, report); },
    [=](phase_report& report) { pass_on(self, report); },
    [=](flush_atom) -> caf::result<bool> {
      if (!self->state.target)
        return true;
      return self->delegate(self->state.target, flush_atom::value);
    },
    [=](repoint_atom, metrics_sink_actor& to) {
      auto& st = self->state;
      if (to && !st.target && st.dropped > 0 && st.say_dropped)
        st.say_dropped(st.dropped);
      if (to)
        st.dropped = 0;
      st.target = std::move(to);
    },
  };
}

} // namespace

metrics_relay_actor spawn_metrics_relay(caf::actor_system& system, metrics_sink_actor target,
                                        std::function<void(std::int64_t)> dropped) {
  return system.spawn(metrics_relay, std::move(target), std::move(dropped));
}

} // namespace troupe
