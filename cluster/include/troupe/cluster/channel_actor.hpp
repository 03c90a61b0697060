// The channel's typed interface: what proxies and nodes may ask of a channel (one connection to
// a peer node, troupe/cluster/channel.hpp). A proxy hands the channel an encoded-to-be request
// (a wire_message of one of its interface's request kinds, cluster/remote/) with the deadline
// its originator set; the channel numbers it, writes it, and answers with the peer's answer
// frame, or fails it (the peer's failure, the deadline, the connection's end).
//
//   (call_atom, wire_message request, deadline) -> wire_message answer
//        request: a push, pull or control (train/validate); its number is set by the channel;
//        answer: the answer kind its interface's codec table allows (weights, report)
//   (send_atom, wire_message)                   -> ()
//        a one-way message (end epoch, batch report, node control); a shutdown is written and
//        then ends the channel (quitting normally when `finished`)
//   (stats_atom)                                -> channel_traffic
//        bytes and frames per kind, both ways
//   (plan_atom, uint64 plan hash, wire_keys)    -> ()
//        the node learned its plan after connecting: what arrives from now on is checked
//        against these keys
// A message of a kind that is no request (call) or no one-way (send) of any interface is
// refused: the call fails with errc::bad_request, a send is logged.
//
// Thread-safety: plain declarations.
#pragma once

#include <array>
#include <cstdint>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <troupe/actors/deadline.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/cluster/wire_messages.hpp>

namespace troupe {

using call_atom = caf::atom_constant<caf::atom("call")>;
using send_atom = caf::atom_constant<caf::atom("send")>;
using plan_atom = caf::atom_constant<caf::atom("plan")>;

/// Bytes and frames that crossed one channel, per message kind (kind_name order), headers
/// included.
struct channel_traffic {
  std::array<std::uint64_t, wire_kinds> bytes_in{}, bytes_out{}, frames_in{}, frames_out{};
  std::uint64_t total_in() const;
  std::uint64_t total_out() const;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, channel_traffic& x) {
  return f(caf::meta::type_name("troupe.channel_traffic"), x.bytes_in, x.bytes_out, x.frames_in,
           x.frames_out);
}

using channel_actor =
  caf::typed_actor<caf::replies_to<call_atom, wire_message, deadline>::with<wire_message>,
                   caf::reacts_to<send_atom, wire_message>,
                   caf::replies_to<stats_atom>::with<channel_traffic>,
                   caf::reacts_to<plan_atom, std::uint64_t, wire_keys>>;

} // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::wire_message)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::wire_keys)
