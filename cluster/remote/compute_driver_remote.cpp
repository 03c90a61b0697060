// The compute's driver interface (compute_actor: train, validate, end epoch) across processes:
// the coordinator on the scheduler drives computes on workers. Its codec table, its skeleton
// (inside the worker's channel to its scheduler) and its proxy (on the scheduler).
//
//   control(train | validate) (request) -> report   (train_atom | validate_atom, epoch) ->
//   phase_report control(end epoch)        (one-way)             (end_epoch_atom, epoch)
//
// Order: a compute's batch reports travel through the worker's metrics proxy, its answer
// through the skeleton; the skeleton flushes that proxy (serving_registry::report_path) before
// it writes the answer, so the scheduler reads every batch report of a phase before its end.
#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/remote/interface_codec.hpp"
#include "cluster/remote/proxy_core.hpp"

namespace troupe {

namespace {

void serve_compute_driver(channel_pointer self, wire_message& message) {
  auto& st = self->state;
  const auto m = std::get<control_message>(message);
  auto compute = st.options->serving->find<remote_interface::compute_driver>(m.rank);
  if (!compute)
    return refuse_unserved(self, m.kind == control_kind::end_epoch ? 0 : m.request,
                           remote_interface::compute_driver, m.rank);
  if (m.kind == control_kind::end_epoch)
    return self->send(compute, end_epoch_atom::value, m.epoch);
  if (auto& at = st.options->position) {
    at->epoch = m.epoch;
    at->batch = -1;
    at->validating = m.kind == control_kind::validate;
  }
  const auto due = deadline_of_frame(m.remaining_ms);
  auto on_report = [=](phase_report& report) {
    auto reports = self->state.options->serving->report_path();
    if (!reports)
      return write_answer(self, report_message{m.request, report}, m.request);
    self->request(reports, due.left_with_grace(), flush_atom::value)
      .then(
        [=](bool) {
          write_answer(self, report_message{m.request, report}, m.request);
        },
        [=](caf::error& err) { write_failure(self, m.request, err); });
  };
  auto on_error = [=](caf::error& err) {
    write_failure(self, m.request, as_served(self, err, "compute " + std::to_string(m.rank)));
  };
  // The compute gives up at the frame's deadline, naming what it waited for; this request
  // waits answer_grace longer for that answer.
  if (m.kind == control_kind::train)
    self->request(compute, due.left_with_grace(), train_atom::value, m.epoch, due)
      .then(on_report, on_error);
  else
    self->request(compute, due.left_with_grace(), validate_atom::value, m.epoch, due)
      .then(on_report, on_error);
}

caf::expected<phase_report> report_of(wire_message& answer) {
  auto* r = std::get_if<report_message>(&answer);
  if (!r)
    return make_error(errc::bad_request, "a phase was answered with no report");
  return std::move(r->report);
}

} // namespace

const interface_codec& compute_driver_codec() {
  static const interface_codec codec{
    remote_interface::compute_driver,
    {{kind_of<control_message>(), kind_role::request},
     {kind_of<control_message>(), kind_role::one_way},
     {kind_of<report_message>(), kind_role::answer}},
    serve_compute_driver,
    [](const wire_message& m) {
      return "compute " + std::to_string(std::get<control_message>(m).rank);
    },
  };
  return codec;
}

compute_actor spawn_compute_proxy(caf::actor_system& system, channel_actor channel,
                                  std::uint32_t rank) {
  using pointer = compute_actor::stateful_pointer<proxy_state>;
  return system.spawn([=](pointer self) -> compute_actor::behavior_type {
    watch_channel(self, channel, "compute " + std::to_string(rank));
    return {
      [=](train_atom, std::int64_t epoch, deadline due) {
        return call_channel<phase_report>(
          self, channel, control_message{0, rank, control_kind::train, epoch}, due, report_of);
      },
      [=](validate_atom, std::int64_t epoch, deadline due) {
        return call_channel<phase_report>(
          self, channel, control_message{0, rank, control_kind::validate, epoch}, due, report_of);
      },
      [=](end_epoch_atom, std::int64_t epoch) {
        if (!self->state.channel_lost)
          self->send(channel, send_atom::value,
                     wire_message{control_message{0, rank, control_kind::end_epoch, epoch}});
      },
    };
  });
}

} // namespace troupe
