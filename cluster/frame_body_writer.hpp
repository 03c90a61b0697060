// Writes a message's body into its frame's Cap'n Proto builder: the half of encode_frame
// (frame_codec.hpp) that knows every message kind's fields, apart from the framing around it.
// Tensor values are referenced from the builder, not copied, where Cap'n Proto allows it.
// Throws std::invalid_argument for a message no decoder would accept (as encode_frame says).
//
// Thread-safety: a pure function of its arguments. Private to the cluster layer.
#pragma once

#include <capnp/message.h>

#include <troupe/cluster/wire_messages.hpp>

#include "schema/wire.capnp.h"

namespace troupe {

/// Writes `message` into `body`, a body of `builder`'s root frame.
void write_frame_body(capnp::MessageBuilder& builder, wire::Frame::Body::Builder body,
                      const wire_message& message);

} // namespace troupe
