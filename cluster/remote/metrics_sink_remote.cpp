// The metrics sink (metrics_sink_actor) across processes: a worker's computes report each
// training batch to the scheduler's metrics actor. Its codec table, its skeleton (inside the
// scheduler's channels) and its proxy (on the worker, over its channel to the scheduler).
//
//   batch report (one-way)   (batch_report)
// A flush is answered by the proxy itself once everything before it has gone to the channel,
// which writes in order: the compute driver's skeleton flushes before it answers a phase.
#include <troupe/cluster/remote_proxies.hpp>

#include <iostream>

#include "cluster/remote/interface_codec.hpp"
#include "cluster/remote/proxy_core.hpp"

namespace troupe {

namespace {

void serve_metrics_sink(channel_pointer self, wire_message& message) {
  auto sink = self->state.options->serving->find<remote_interface::metrics_sink>(0);
  if (!sink)
    return refuse_peer(self, "sent a batch report, which this node does not take");
  self->send(sink, std::get<batch_report_message>(message).report);
}

} // namespace

const interface_codec& metrics_sink_codec() {
  static const interface_codec codec{
    remote_interface::metrics_sink,
    {{kind_of<batch_report_message>(), kind_role::one_way}},
    serve_metrics_sink,
    [](const wire_message&) { return std::string("the metrics actor"); },
  };
  return codec;
}

metrics_sink_actor spawn_metrics_sink_proxy(caf::actor_system& system, channel_actor channel,
                                            std::shared_ptr<run_position> position) {
  using pointer = metrics_sink_actor::stateful_pointer<proxy_state>;
  return system.spawn([=](pointer self) -> metrics_sink_actor::behavior_type {
    watch_channel(self, channel, "the metrics actor");
    return {
      [=](batch_report& report) {
        if (position) {
          position->batch = report.index;
          position->batches = report.batches;
        }
        self->send(channel, send_atom::value, wire_message{batch_report_message{report}});
      },
      [=](phase_report& report) {
        std::cerr << ("troupe: a phase report (epoch " + std::to_string(report.epoch)
                      + ") has no frame to the scheduler's metrics actor: dropped\n");
      },
      [=](flush_atom) { return true; },
    };
  });
}

} // namespace troupe
