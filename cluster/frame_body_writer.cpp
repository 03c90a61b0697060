// The body of each message kind as Cap'n Proto builds it (see frame_body_writer.hpp): one
// visitor case per kind, each checking what a decoder would refuse before it writes.
#include "cluster/frame_body_writer.hpp"

#include <cmath>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <type_traits>

#include <capnp/message.h>

namespace troupe {

namespace {

constexpr std::size_t largest_data_bytes = (std::size_t{1} << 29) - 1; // Cap'n Proto's Data cap

void check_text(const std::string& text, std::size_t limit, const char* what) {
  if (text.size() > limit)
    throw std::invalid_argument(std::string("frame: ") + what + " has "
                                + std::to_string(text.size()) + " bytes, at most "
                                + std::to_string(limit) + " travel");
}

void set_keys(capnp::List<std::uint32_t>::Builder out, const std::vector<std::size_t>& keys) {
  for (unsigned i = 0; i < keys.size(); ++i) {
    if (keys[i] > UINT32_MAX)
      throw std::invalid_argument("frame: key index " + std::to_string(keys[i])
                                  + " does not fit the wire");
    out.set(i, static_cast<std::uint32_t>(keys[i]));
  }
}

void write_ranks(capnp::List<std::uint32_t>::Builder out, const std::vector<std::uint32_t>& ranks) {
  if (ranks.size() > assignment_message::max_ranks)
    throw std::invalid_argument("frame: " + std::to_string(ranks.size())
                                + " ranks to move, at most "
                                + std::to_string(assignment_message::max_ranks) + " travel");
  for (unsigned i = 0; i < ranks.size(); ++i)
    out.set(i, ranks[i]);
}

void set_values(capnp::MessageBuilder& builder, capnp::List<capnp::Data>::Builder out,
                const std::vector<tensor>& values) {
  for (unsigned i = 0; i < values.size(); ++i) {
    const auto* bytes = reinterpret_cast<const capnp::byte*>(values[i].data());
    const std::size_t size = values[i].bytes();
    if (size > largest_data_bytes)
      throw std::invalid_argument("frame: a tensor of " + std::to_string(size)
                                  + " bytes exceeds a Data field (slice keys below 512 MiB)");
    if (reinterpret_cast<std::uintptr_t>(bytes) % 8 == 0 && size % 8 == 0) {
      out.adopt(i, builder.getOrphanage().referenceExternalData(capnp::Data::Reader(bytes, size)));
    } else {
      auto copy = out.init(i, static_cast<unsigned>(size));
      std::memcpy(copy.begin(), bytes, size);
    }
  }
}

// Compressed values are packed into the frame's own memory (a copy, 2 bytes or 2 bits each).
void set_packed_values(capnp::List<capnp::Data>::Builder out, const std::vector<tensor>& values,
                       value_encoding encoding, const std::vector<float>& scales,
                       const char* what) {
  std::size_t first_scale = 0; // of tensor i: 2-bit scales are the tensors' blocks in order
  for (unsigned i = 0; i < values.size(); ++i) {
    const auto n = static_cast<std::size_t>(values[i].numel());
    const std::size_t size = encoded_bytes(encoding, n);
    if (size > largest_data_bytes)
      throw std::invalid_argument("frame: a packed tensor of " + std::to_string(size)
                                  + " bytes exceeds a Data field");
    auto packed = out.init(i, static_cast<unsigned>(size));
    const float* tensor_scales = scales.data() + first_scale;
    if (encoding == value_encoding::two_bit)
      first_scale += two_bit_scales(n);
    try {
      encode_values(encoding, tensor_scales, values[i].data(), n, packed.begin());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("frame: ") + what + " tensor " + std::to_string(i)
                                  + ": " + e.what());
    }
  }
}

wire::Encoding to_wire(value_encoding encoding) {
  switch (encoding) {
  case value_encoding::none:
    return wire::Encoding::FLOAT32;
  case value_encoding::fp16:
    return wire::Encoding::FP16;
  case value_encoding::bf16:
    return wire::Encoding::BF16;
  case value_encoding::two_bit:
    return wire::Encoding::TWO_BIT;
  }
  throw std::invalid_argument("frame: unknown value encoding "
                              + std::to_string(static_cast<int>(encoding)));
}

wire::ErrorCode to_wire(errc code) {
  switch (code) {
  case errc::bad_request:
    return wire::ErrorCode::BAD_REQUEST;
  case errc::bad_data:
    return wire::ErrorCode::BAD_DATA;
  case errc::peer_down:
    return wire::ErrorCode::PEER_DOWN;
  case errc::timeout:
    return wire::ErrorCode::TIMEOUT;
  case errc::internal:
    break;
  }
  return wire::ErrorCode::INTERNAL;
}

wire::Role to_wire(node_kind role) {
  switch (role) {
  case node_kind::scheduler:
    return wire::Role::SCHEDULER;
  case node_kind::server:
    return wire::Role::SERVER;
  case node_kind::worker:
    return wire::Role::WORKER;
  case node_kind::ctl:
    return wire::Role::CTL;
  case node_kind::process:
    break;
  }
  throw std::invalid_argument("frame: a one-process node has no role on the wire");
}

// Fills the frame's body from one message; each overload sets one union member.
// A traffic answer (also inside a rejoin: its last answer).
void write_traffic(wire::Traffic::Builder out, const traffic_message& m) {
  if (m.peers.size() > traffic_message::max_peers)
    throw std::invalid_argument("a traffic report of " + std::to_string(m.peers.size()) + " peers");
  out.setEpoch(m.epoch);
  auto peers = out.initPeers(static_cast<unsigned>(m.peers.size()));
  for (std::size_t i = 0; i < m.peers.size(); ++i) {
    const auto& p = m.peers[i];
    check_text(p.peer, hello_message::max_name_bytes, "a traffic report's peer");
    if (p.bytes_in.size() > peer_traffic::max_kinds || p.bytes_out.size() > peer_traffic::max_kinds)
      throw std::invalid_argument("a traffic report with more than "
                                  + std::to_string(peer_traffic::max_kinds) + " kinds");
    auto to = peers[static_cast<unsigned>(i)];
    to.setPeer(p.peer);
    auto in = to.initBytesIn(static_cast<unsigned>(p.bytes_in.size()));
    for (std::size_t k = 0; k < p.bytes_in.size(); ++k)
      in.set(static_cast<unsigned>(k), p.bytes_in[k]);
    auto outgoing = to.initBytesOut(static_cast<unsigned>(p.bytes_out.size()));
    for (std::size_t k = 0; k < p.bytes_out.size(); ++k)
      outgoing.set(static_cast<unsigned>(k), p.bytes_out[k]);
  }
  if (m.waits.size() > traffic_message::max_peers)
    throw std::invalid_argument("a traffic report of " + std::to_string(m.waits.size()) + " waits");
  auto waits = out.initWaits(static_cast<unsigned>(m.waits.size()));
  for (std::size_t i = 0; i < m.waits.size(); ++i) {
    const auto& w = m.waits[i];
    check_text(w.node, hello_message::max_name_bytes, "a traffic report's waited-for node");
    if (!std::isfinite(w.seconds) || w.seconds < 0)
      throw std::invalid_argument("a traffic report's wait of " + std::to_string(w.seconds) + " s");
    auto to = waits[static_cast<unsigned>(i)];
    to.setNode(w.node);
    to.setSeconds(w.seconds);
    to.setSteps(w.steps);
  }
}

struct body_writer {
  capnp::MessageBuilder& builder;
  wire::Frame::Body::Builder body;

  void operator()(const hello_message& m) {
    check_text(m.name, hello_message::max_name_bytes, "a hello's name");
    auto out = body.initHello();
    out.setRole(to_wire(m.role));
    out.setName(m.name);
    out.setNonce(capnp::Data::Reader(m.challenge.data(), m.challenge.size()));
    out.setPlanHash(m.plan_hash);
  }
  void operator()(const proof_message& m) {
    body.initProof().setMac(capnp::Data::Reader(m.proof.data(), m.proof.size()));
  }
  // Keys and their tensors, one for one, packed as `encoding` says (float32 by reference).
  template <class Out>
  void set_keyed(Out out, const std::vector<std::size_t>& keys, const std::vector<tensor>& values,
                 value_encoding encoding, const std::vector<float>& scales, const char* what) {
    if (keys.size() != values.size())
      throw std::invalid_argument(std::string("frame: ") + what + " lists "
                                  + std::to_string(keys.size()) + " keys and "
                                  + std::to_string(values.size()) + " tensors");
    set_keys(out.initKeys(static_cast<unsigned>(keys.size())), keys);
    out.setEncoding(to_wire(encoding));
    std::size_t want_scales = 0;
    if (encoding == value_encoding::two_bit)
      for (const auto& v : values)
        want_scales += two_bit_scales(static_cast<std::size_t>(v.numel()));
    if (scales.size() != want_scales)
      throw std::invalid_argument(std::string("frame: ") + what + " encoded " + to_string(encoding)
                                  + " has " + std::to_string(scales.size()) + " scales, expected "
                                  + std::to_string(want_scales));
    auto scale_list = out.initScales(static_cast<unsigned>(scales.size()));
    for (unsigned i = 0; i < scales.size(); ++i)
      scale_list.set(i, scales[i]);
    if (encoding == value_encoding::none)
      set_values(builder, out.initValues(static_cast<unsigned>(values.size())), values);
    else
      set_packed_values(out.initValues(static_cast<unsigned>(values.size())), values, encoding,
                        scales, what);
  }

  void put_push(wire::Push::Builder out, std::uint64_t request, std::uint32_t shard,
                const gradient_push& push, std::uint64_t remaining_ms) {
    out.setRequest(request);
    out.setShard(shard);
    out.setStep(push.step);
    out.setEpochPosition(push.epoch_position);
    out.setSource(push.source);
    out.setSamples(push.samples);
    out.setRemainingMs(remaining_ms);
    set_keyed(out, push.keys, push.gradients, push.encoding, push.scales, "a push");
  }
  void operator()(const push_message& m) {
    put_push(body.initPush(), m.request, m.shard, m.push, m.remaining_ms);
  }
  void operator()(const pull_message& m) {
    auto out = body.initPull();
    out.setRequest(m.request);
    out.setShard(m.shard);
    out.setRemainingMs(m.remaining_ms);
    out.setRewind(m.rewind);
    out.setBeforeStep(m.before_step);
    out.setSource(m.source);
  }
  void operator()(const weights_message& m) {
    const auto& ws = m.weights;
    auto out = body.initWeights();
    out.setRequest(m.request);
    out.setShard(m.shard);
    out.setUpdates(ws.updates);
    out.setLearningRate(ws.learning_rate);
    out.setBeforeStep(ws.before_step);
    set_keyed(out, ws.keys, ws.weights, ws.encoding, ws.scales, "a weight set");
  }
  void operator()(const failure_message& m) {
    check_text(m.text, failure_message::max_text_bytes, "a failure's text");
    auto out = body.initFailure();
    out.setRequest(m.request);
    out.setCode(to_wire(m.code));
    out.setMessage(m.text);
  }
  void operator()(const heartbeat_message& m) { body.initHeartbeat().setSequence(m.sequence); }
  void operator()(const shutdown_message& m) {
    check_text(m.reason, failure_message::max_text_bytes, "a shutdown's reason");
    auto out = body.initShutdown();
    out.setReason(m.reason);
    out.setFinished(m.finished);
    out.setLostNode(m.lost_node);
    out.setFenced(m.fenced);
  }
  void operator()(const join_message& m) {
    check_text(m.host, join_message::max_host_bytes, "a join's host");
    auto out = body.initJoin();
    out.setRole(to_wire(m.role));
    out.setHost(m.host);
    out.setPort(m.port);
    out.setPid(m.pid);
    out.setRank(m.rank);
    out.setJobHash(m.job_hash);
    out.setSpare(m.spare);
    out.setSentMicros(m.sent_micros);
    if (m.job.size() > join_message::max_job_bytes)
      throw std::invalid_argument("frame: a join's job of " + std::to_string(m.job.size())
                                  + " bytes exceeds "
                                  + std::to_string(join_message::max_job_bytes));
    out.setJob(
      capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(m.job.data()), m.job.size()));
    if (!m.rejoin)
      return;
    const auto& r = *m.rejoin;
    if (r.adopted.size() > rejoin_message::max_nodes
        || r.promoted.size() > rejoin_message::max_nodes)
      throw std::invalid_argument("frame: a rejoin names more than "
                                  + std::to_string(rejoin_message::max_nodes) + " nodes");
    auto rejoin = out.initRejoin();
    rejoin.setNode(r.node);
    rejoin.setThreads(r.threads);
    rejoin.setEpoch(r.epoch);
    rejoin.setAppliedStep(r.applied_step);
    rejoin.setTerm(r.term);
    auto adopted = rejoin.initAdopted(static_cast<unsigned>(r.adopted.size()));
    for (unsigned i = 0; i < r.adopted.size(); ++i)
      adopted.set(i, r.adopted[i]);
    auto promoted = rejoin.initPromoted(static_cast<unsigned>(r.promoted.size()));
    for (unsigned i = 0; i < r.promoted.size(); ++i)
      promoted.set(i, r.promoted[i]);
    if (r.counted)
      write_traffic(rejoin.initCounted(), *r.counted);
  }
  void operator()(const assignment_message& m) {
    if (m.job.size() > assignment_message::max_job_bytes)
      throw std::invalid_argument("frame: a job of " + std::to_string(m.job.size())
                                  + " bytes exceeds "
                                  + std::to_string(assignment_message::max_job_bytes));
    if (m.servers.size() > assignment_message::max_servers)
      throw std::invalid_argument("frame: more than "
                                  + std::to_string(assignment_message::max_servers) + " servers");
    auto out = body.initAssignment();
    out.setRank(m.rank);
    out.setNode(m.node);
    out.setJob(
      capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(m.job.data()), m.job.size()));
    out.setJobHash(m.job_hash);
    out.setPlanHash(m.plan_hash);
    auto facts = out.initFacts();
    auto shape = facts.initSampleShape(static_cast<unsigned>(m.facts.sample_shape.size()));
    for (unsigned i = 0; i < shape.size(); ++i)
      shape.set(i, m.facts.sample_shape[i]);
    facts.setClasses(m.facts.classes);
    facts.setTrainExamples(m.facts.train_examples);
    facts.setValidationExamples(m.facts.validation_examples);
    auto servers = out.initServers(static_cast<unsigned>(m.servers.size()));
    for (unsigned i = 0; i < servers.size(); ++i) {
      check_text(m.servers[i].host, join_message::max_host_bytes, "a server's host");
      servers[i].setNode(m.servers[i].node);
      servers[i].setHost(m.servers[i].host);
      servers[i].setPort(m.servers[i].port);
    }
    out.setThreads(m.threads);
    out.setAdopt(m.adopt);
    auto clock = out.initClock();
    clock.setJoinSent(m.clock.join_sent);
    clock.setJoinReceived(m.clock.join_received);
    clock.setSent(m.clock.sent);
    write_ranks(out.initRanks(static_cast<unsigned>(m.ranks.size())), m.ranks);
    out.setTerm(m.term);
  }
  void operator()(const ready_message& m) {
    auto out = body.initReady();
    out.setNode(m.node);
    out.setPort(m.port);
    out.setThreads(m.threads);
  }
  void operator()(const control_message& m) {
    auto out = body.initControl();
    out.setRequest(m.request);
    out.setRank(m.rank);
    out.setKind(m.kind == control_kind::train      ? wire::ControlKind::TRAIN
                : m.kind == control_kind::validate ? wire::ControlKind::VALIDATE
                                                   : wire::ControlKind::END_EPOCH);
    out.setEpoch(m.epoch);
    out.setRemainingMs(m.remaining_ms);
  }
  void operator()(const report_message& m) {
    const auto& r = m.report;
    auto out = body.initReport();
    out.setRequest(m.request);
    out.setEpoch(r.epoch);
    out.setValidation(r.validation);
    out.setSamples(r.samples);
    out.setCorrect(r.correct);
    out.setLossSum(r.loss_sum);
    out.setSeconds(r.seconds);
    out.setStepSeconds(r.step_seconds);
    out.setSkipped(r.skipped);
    out.setTopK(r.top_k);
    out.setTopKCorrect(r.top_k_correct);
  }
  void operator()(const batch_report_message& m) {
    const auto& r = m.report;
    auto out = body.initBatchReport();
    out.setRank(r.rank);
    out.setEpoch(r.epoch);
    out.setIndex(r.index);
    out.setBatches(r.batches);
    out.setSamples(r.samples);
    out.setCorrect(r.correct);
    out.setLossSum(r.loss_sum);
    out.setLearningRate(r.learning_rate);
    out.setTopK(r.top_k);
    out.setTopKCorrect(r.top_k_correct);
    out.setStepSeconds(r.step_seconds);
    out.setWaitSeconds(r.wait_seconds);
    out.setValuesPushed(r.values_pushed);
    out.setValuesSent(r.values_sent);
  }
  void operator()(const traffic_query_message& m) { body.initTrafficQuery().setEpoch(m.epoch); }
  void operator()(const checkpoint_message& m) {
    check_text(m.path, checkpoint_message::max_path_bytes, "a checkpoint's path");
    auto out = body.initCheckpoint();
    out.setRequest(m.request);
    out.setKind(m.kind == checkpoint_kind::save ? wire::CheckpointKind::SAVE
                                                : wire::CheckpointKind::RESTORE);
    out.setEpoch(m.epoch);
    out.setPath(m.path);
    out.setRemainingMs(m.remaining_ms);
  }
  void operator()(const checkpoint_done_message& m) {
    check_text(m.file, checkpoint_message::max_path_bytes, "a checkpoint part's file");
    check_text(m.checksum, checkpoint_done_message::max_checksum_bytes,
               "a checkpoint part's checksum");
    auto out = body.initCheckpointDone();
    out.setRequest(m.request);
    out.setFile(m.file);
    out.setBytes(m.bytes);
    out.setChecksum(m.checksum);
  }
  void operator()(const adopt_message& m) {
    auto out = body.initAdopt();
    out.setNode(m.node);
    write_ranks(out.initRanks(static_cast<unsigned>(m.ranks.size())), m.ranks);
  }
  void operator()(const replicate_message& m) {
    put_push(body.initReplicate(), m.request, m.shard, m.push, m.remaining_ms);
  }
  void operator()(const replicated_message& m) {
    auto out = body.initReplicated();
    out.setRequest(m.request);
    out.setUpdates(m.updates);
  }
  void operator()(const fence_message& m) {
    check_text(m.reason, failure_message::max_text_bytes, "a fence's reason");
    auto out = body.initFence();
    out.setNode(m.node);
    out.setTerm(m.term);
    out.setReason(m.reason);
  }
  void operator()(const promote_message& m) {
    auto out = body.initPromote();
    out.setNode(m.node);
    out.setServer(m.server);
  }
  void operator()(const leave_message& m) {
    check_text(m.reason, failure_message::max_text_bytes, "a leave's reason");
    body.initLeave().setReason(m.reason);
  }
  void operator()(const release_message& m) {
    check_text(m.reason, failure_message::max_text_bytes, "a release's reason");
    auto out = body.initRelease();
    out.setGranted(m.granted);
    out.setReason(m.reason);
  }
  void operator()(const cede_message& m) {
    auto out = body.initCede();
    out.setNode(m.node);
    write_ranks(out.initRanks(static_cast<unsigned>(m.ranks.size())), m.ranks);
  }
  void operator()(const command_message& m) {
    check_text(m.verb, command_message::max_word_bytes, "a command's verb");
    if (m.args.size() > command_message::max_args)
      throw std::invalid_argument("frame: a command has " + std::to_string(m.args.size())
                                  + " arguments, at most "
                                  + std::to_string(command_message::max_args));
    auto out = body.initCommand();
    out.setRequest(m.request);
    out.setVerb(m.verb);
    auto args = out.initArgs(static_cast<unsigned>(m.args.size()));
    for (std::size_t i = 0; i < m.args.size(); ++i) {
      check_text(m.args[i], failure_message::max_text_bytes, "a command's argument");
      args.set(static_cast<unsigned>(i), m.args[i]);
    }
    out.setRemainingMs(m.remaining_ms);
  }
  void operator()(const command_result_message& m) {
    check_text(m.text, command_result_message::max_answer_bytes, "a command's answer");
    check_text(m.json, command_result_message::max_answer_bytes, "a command's JSON answer");
    auto out = body.initCommandResult();
    out.setRequest(m.request);
    out.setText(m.text);
    out.setJson(m.json);
  }
  void operator()(const drain_message& m) {
    check_text(m.reason, failure_message::max_text_bytes, "a drain's reason");
    body.initDrain().setReason(m.reason);
  }
  void operator()(const change_message& m) {
    auto out = body.initChange();
    out.setRequest(m.request);
    switch (m.change.setting) {
    case shard_setting::lr:
      out.setSetting(wire::ShardSetting::LR);
      break;
    case shard_setting::momentum:
      out.setSetting(wire::ShardSetting::MOMENTUM);
      break;
    case shard_setting::wd:
      out.setSetting(wire::ShardSetting::WD);
      break;
    case shard_setting::staleness:
      out.setSetting(wire::ShardSetting::STALENESS);
      break;
    }
    out.setValue(m.change.value);
    out.setStep(m.change.step);
    out.setRemainingMs(m.remaining_ms);
  }
  void operator()(const changed_message& m) {
    auto out = body.initChanged();
    out.setRequest(m.request);
    out.setShards(m.shards);
  }
  void operator()(const traffic_message& m) { write_traffic(body.initTraffic(), m); }
};

} // namespace

void write_frame_body(capnp::MessageBuilder& builder, wire::Frame::Body::Builder body,
                      const wire_message& message) {
  std::visit(body_writer{builder, body}, message);
}

} // namespace troupe
