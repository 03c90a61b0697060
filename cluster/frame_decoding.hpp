// What the two halves of decode_payload (frame_codec.hpp) share: frame_decoder.cpp reads the
// frame and its tensor messages, frame_decoder_control.cpp the control messages (joins,
// assignments, reports, traffic, checkpoints). A failed check throws `refused` naming the
// field; decode_payload turns it into the result's error.
//
// Thread-safety: pure functions. Private to the cluster layer.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <troupe/cluster/wire_messages.hpp>

#include "schema/wire.capnp.h"

namespace troupe::frame_decoding {

struct refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void refuse(const std::string& why) {
  throw refused(why);
}

inline std::string text_of(capnp::Text::Reader text, std::size_t limit, const char* what) {
  if (text.size() > limit)
    refuse(std::string(what) + " has " + std::to_string(text.size()) + " bytes, at most "
           + std::to_string(limit) + " are accepted");
  return std::string(text.cStr(), text.size());
}

template <std::size_t N>
std::array<std::uint8_t, N> fixed_bytes(capnp::Data::Reader data, const char* what) {
  if (data.size() != N)
    refuse(std::string(what) + " has " + std::to_string(data.size()) + " bytes, expected "
           + std::to_string(N));
  std::array<std::uint8_t, N> out{};
  std::copy(data.begin(), data.end(), out.begin());
  return out;
}

inline void require(bool holds, const std::string& what) {
  if (!holds)
    refuse(what);
}

inline bool finite_non_negative(double x) {
  return std::isfinite(x) && x >= 0;
}

/// The ranks an assignment, adopt or cede names: at most max_ranks, each once, ascending.
inline std::vector<std::uint32_t> read_ranks(capnp::List<std::uint32_t>::Reader in,
                                             const char* what) {
  require(in.size() <= assignment_message::max_ranks,
          std::string(what) + ".ranks lists " + std::to_string(in.size()) + " ranks, at most "
            + std::to_string(assignment_message::max_ranks) + " are accepted");
  std::vector<std::uint32_t> ranks;
  for (auto r : in)
    ranks.push_back(r);
  for (std::size_t i = 1; i < ranks.size(); ++i)
    require(ranks[i - 1] < ranks[i],
            std::string(what) + ".ranks lists rank " + std::to_string(ranks[i]) + " after "
              + std::to_string(ranks[i - 1]) + ": each rank once, in ascending order");
  return ranks;
}

/// The role, error code and time left a frame names, each checked.
node_kind role_of(wire::Role role);
errc code_of(wire::ErrorCode code);
std::uint64_t remaining_of(std::uint64_t ms, const char* what);

/// The control messages (frame_decoder_control.cpp).
assignment_message read_assignment(wire::Assignment::Reader in);
traffic_message read_traffic(wire::Traffic::Reader in);
join_message read_join(wire::Join::Reader in);
control_message read_control(wire::Control::Reader in);
checkpoint_message read_checkpoint_request(wire::Checkpoint::Reader in);
checkpoint_done_message read_checkpoint_done(wire::CheckpointDone::Reader in);
command_message read_command(wire::Command::Reader in);
command_result_message read_command_result(wire::CommandResult::Reader in);
change_message read_change(wire::Change::Reader in);
report_message read_report(wire::Report::Reader in);
batch_report_message read_batch_report(wire::BatchReport::Reader in);

} // namespace troupe::frame_decoding
