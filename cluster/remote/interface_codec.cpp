// See interface_codec.hpp: the lookups over every interface's table.
#include "cluster/remote/interface_codec.hpp"

#include <algorithm>

namespace troupe {

bool interface_codec::takes(std::size_t kind, kind_role role) const {
  return std::any_of(kinds.begin(), kinds.end(),
                     [&](const kind_entry& e) { return e.kind == kind && e.role == role; });
}

namespace {

std::array<const interface_codec*, remote_interfaces> all_codecs() {
  return {&push_target_codec(),       &compute_driver_codec(), &metrics_sink_codec(),
          &scheduler_control_codec(), &member_control_codec(), &checkpoint_part_codec(),
          &shard_backup_codec(),      &run_control_codec(),    &shard_change_codec()};
}

} // namespace

const interface_codec* codec_taking(std::size_t kind, kind_role role) {
  static const auto codecs = all_codecs();
  for (const auto* codec : codecs)
    if (codec->takes(kind, role))
      return codec;
  return nullptr;
}

const interface_codec& codec_of(remote_interface interface) {
  static const auto codecs = all_codecs();
  return *codecs.at(static_cast<std::size_t>(interface));
}

const char* to_string(remote_interface interface) {
  switch (interface) {
  case remote_interface::push_target:
    return "push target";
  case remote_interface::compute_driver:
    return "compute driver";
  case remote_interface::metrics_sink:
    return "metrics sink";
  case remote_interface::scheduler_control:
    return "scheduler control";
  case remote_interface::member_control:
    return "member control";
  case remote_interface::checkpoint_part:
    return "checkpoint part";
  case remote_interface::shard_backup:
    return "shard backup";
  case remote_interface::run_control:
    return "run control";
  case remote_interface::shard_change:
    return "shard change";
  }
  return "unknown interface";
}

} // namespace troupe
