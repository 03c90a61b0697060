// The control messages of decode_payload (see frame_decoding.hpp): every count, rank, name and
// time they carry checked before anything of them reaches an actor.
#include "cluster/frame_decoding.hpp"

#include <cmath>

namespace troupe::frame_decoding {

assignment_message read_assignment(wire::Assignment::Reader in) {
  assignment_message m;
  m.rank = in.getRank();
  m.node = in.getNode();
  const auto job = in.getJob();
  require(job.size() <= assignment_message::max_job_bytes,
          "assignment.job has " + std::to_string(job.size()) + " bytes, at most "
            + std::to_string(assignment_message::max_job_bytes) + " are accepted");
  m.job.assign(reinterpret_cast<const char*>(job.begin()),
               reinterpret_cast<const char*>(job.end()));
  m.job_hash = in.getJobHash();
  m.plan_hash = in.getPlanHash();
  const auto facts = in.getFacts();
  const auto shape = facts.getSampleShape();
  require(shape.size() >= 1 && shape.size() <= 4, "assignment.facts.sampleShape has "
                                                    + std::to_string(shape.size())
                                                    + " dimensions, expected 1 to 4");
  m.facts.sample_shape.clear();
  for (auto d : shape) {
    require(d >= 1 && d <= 65536,
            "assignment.facts.sampleShape has an extent of " + std::to_string(d));
    m.facts.sample_shape.push_back(d);
  }
  m.facts.classes = facts.getClasses();
  m.facts.train_examples = facts.getTrainExamples();
  m.facts.validation_examples = facts.getValidationExamples();
  require(m.facts.classes >= 1 && m.facts.classes <= 1000000,
          "assignment.facts.classes " + std::to_string(m.facts.classes) + " is outside 1..1000000");
  require(m.facts.train_examples >= 0 && m.facts.validation_examples >= 0,
          "assignment.facts has a negative example count");
  const auto servers = in.getServers();
  require(servers.size() <= assignment_message::max_servers,
          "assignment lists " + std::to_string(servers.size()) + " servers, at most "
            + std::to_string(assignment_message::max_servers) + " are accepted");
  for (auto s : servers)
    m.servers.push_back(
      {s.getNode(), text_of(s.getHost(), join_message::max_host_bytes, "assignment.servers.host"),
       s.getPort()});
  m.threads = in.getThreads();
  require(m.threads <= 4096, "assignment.threads " + std::to_string(m.threads) + " is above 4096");
  m.adopt = in.getAdopt();
  const auto clock = in.getClock();
  m.clock = {clock.getJoinSent(), clock.getJoinReceived(), clock.getSent()};
  require(m.clock.join_sent >= 0 && m.clock.join_received >= 0 && m.clock.sent >= 0,
          "assignment.clock has a negative stamp");
  m.ranks = read_ranks(in.getRanks(), "assignment");
  m.term = in.getTerm();
  require(m.term >= 1, "assignment.term is 0 (terms begin at 1)");
  return m;
}

traffic_message read_traffic(wire::Traffic::Reader in) {
  traffic_message m;
  m.epoch = in.getEpoch();
  const auto peers = in.getPeers();
  require(peers.size() <= traffic_message::max_peers,
          "traffic lists " + std::to_string(peers.size()) + " peers, at most "
            + std::to_string(traffic_message::max_peers) + " are accepted");
  for (auto p : peers) {
    peer_traffic t;
    t.peer = text_of(p.getPeer(), hello_message::max_name_bytes, "traffic.peers.peer");
    const auto in_bytes = p.getBytesIn(), out_bytes = p.getBytesOut();
    require(in_bytes.size() <= peer_traffic::max_kinds
              && out_bytes.size() <= peer_traffic::max_kinds,
            "traffic.peers lists more than " + std::to_string(peer_traffic::max_kinds) + " kinds");
    for (auto b : in_bytes)
      t.bytes_in.push_back(b);
    for (auto b : out_bytes)
      t.bytes_out.push_back(b);
    m.peers.push_back(std::move(t));
  }
  const auto waits = in.getWaits();
  require(waits.size() <= traffic_message::max_peers,
          "traffic lists " + std::to_string(waits.size()) + " waits, at most "
            + std::to_string(traffic_message::max_peers) + " are accepted");
  for (auto w : waits) {
    node_wait wait;
    wait.node = text_of(w.getNode(), hello_message::max_name_bytes, "traffic.waits.node");
    wait.seconds = w.getSeconds();
    require(std::isfinite(wait.seconds) && wait.seconds >= 0,
            "traffic.waits.seconds is negative or not finite");
    wait.steps = w.getSteps();
    m.waits.push_back(std::move(wait));
  }
  return m;
}

join_message read_join(wire::Join::Reader in) {
  require(in.getRank() >= -1, "join.rank " + std::to_string(in.getRank()) + " is below -1");
  join_message m{
    role_of(in.getRole()), text_of(in.getHost(), join_message::max_host_bytes, "join.host"),
    in.getPort(),          in.getPid(),
    in.getRank(),          in.getJobHash()};
  const auto job = in.getJob();
  require(job.size() <= join_message::max_job_bytes,
          "join.job has " + std::to_string(job.size()) + " bytes, at most "
            + std::to_string(join_message::max_job_bytes) + " are accepted");
  m.job.assign(reinterpret_cast<const char*>(job.begin()),
               reinterpret_cast<const char*>(job.end()));
  m.spare = in.getSpare();
  m.sent_micros = in.getSentMicros();
  require(m.sent_micros >= 0, "join.sentMicros " + std::to_string(m.sent_micros) + " is negative");
  if (!in.hasRejoin())
    return m;
  const auto r = in.getRejoin();
  rejoin_message rejoin;
  rejoin.node = r.getNode();
  rejoin.threads = r.getThreads();
  require(rejoin.threads <= 4096,
          "join.rejoin.threads " + std::to_string(rejoin.threads) + " is above 4096");
  rejoin.epoch = r.getEpoch();
  require(rejoin.epoch >= -1, "join.rejoin.epoch " + std::to_string(rejoin.epoch) + " is below -1");
  rejoin.applied_step = r.getAppliedStep();
  rejoin.term = r.getTerm();
  require(rejoin.applied_step >= -1,
          "join.rejoin.appliedStep " + std::to_string(rejoin.applied_step) + " is below -1");
  const auto nodes = [](capnp::List<std::uint32_t>::Reader list, const char* name) {
    require(list.size() <= rejoin_message::max_nodes,
            std::string("join.rejoin.") + name + " names " + std::to_string(list.size())
              + " nodes, at most " + std::to_string(rejoin_message::max_nodes) + " are accepted");
    std::vector<std::uint32_t> out;
    for (auto n : list)
      out.push_back(n);
    return out;
  };
  rejoin.adopted = nodes(r.getAdopted(), "adopted");
  rejoin.promoted = nodes(r.getPromoted(), "promoted");
  if (r.hasCounted())
    rejoin.counted = read_traffic(r.getCounted());
  m.rejoin = std::move(rejoin);
  return m;
}

control_message read_control(wire::Control::Reader in) {
  control_message m;
  m.request = in.getRequest();
  m.rank = in.getRank();
  switch (in.getKind()) {
  case wire::ControlKind::TRAIN:
    m.kind = control_kind::train;
    break;
  case wire::ControlKind::VALIDATE:
    m.kind = control_kind::validate;
    break;
  case wire::ControlKind::END_EPOCH:
    m.kind = control_kind::end_epoch;
    break;
  default:
    refuse("control.kind " + std::to_string(static_cast<unsigned>(in.getKind()))
           + " is not a control kind");
  }
  m.epoch = in.getEpoch();
  require(m.epoch >= 0, "control.epoch " + std::to_string(m.epoch) + " is negative");
  if (m.kind == control_kind::end_epoch)
    require(in.getRemainingMs() == 0, "control.remainingMs of an end of epoch is not 0");
  else
    m.remaining_ms = remaining_of(in.getRemainingMs(), "control");
  return m;
}

checkpoint_message read_checkpoint_request(wire::Checkpoint::Reader in) {
  checkpoint_message m;
  m.request = in.getRequest();
  switch (in.getKind()) {
  case wire::CheckpointKind::SAVE:
    m.kind = checkpoint_kind::save;
    break;
  case wire::CheckpointKind::RESTORE:
    m.kind = checkpoint_kind::restore;
    break;
  default:
    refuse("checkpoint.kind " + std::to_string(static_cast<unsigned>(in.getKind()))
           + " is not a checkpoint kind");
  }
  m.epoch = in.getEpoch();
  require(m.epoch >= 0, "checkpoint.epoch " + std::to_string(m.epoch) + " is negative");
  m.path = text_of(in.getPath(), checkpoint_message::max_path_bytes, "checkpoint.path");
  require(!m.path.empty(), "checkpoint.path is empty");
  m.remaining_ms = remaining_of(in.getRemainingMs(), "checkpoint");
  return m;
}

checkpoint_done_message read_checkpoint_done(wire::CheckpointDone::Reader in) {
  checkpoint_done_message m;
  m.request = in.getRequest();
  m.file = text_of(in.getFile(), checkpoint_message::max_path_bytes, "checkpointDone.file");
  m.bytes = in.getBytes();
  m.checksum = text_of(in.getChecksum(), checkpoint_done_message::max_checksum_bytes,
                       "checkpointDone.checksum");
  return m;
}

command_message read_command(wire::Command::Reader in) {
  command_message m;
  m.request = in.getRequest();
  m.verb = text_of(in.getVerb(), command_message::max_word_bytes, "command.verb");
  require(!m.verb.empty(), "command.verb is empty");
  auto args = in.getArgs();
  require(args.size() <= command_message::max_args,
          "command.args has " + std::to_string(args.size()) + " entries, at most "
            + std::to_string(command_message::max_args));
  for (auto arg : args)
    m.args.push_back(text_of(arg, failure_message::max_text_bytes, "command.args"));
  m.remaining_ms = remaining_of(in.getRemainingMs(), "command");
  return m;
}

command_result_message read_command_result(wire::CommandResult::Reader in) {
  command_result_message m;
  m.request = in.getRequest();
  m.text = text_of(in.getText(), command_result_message::max_answer_bytes, "commandResult.text");
  m.json = text_of(in.getJson(), command_result_message::max_answer_bytes, "commandResult.json");
  return m;
}

change_message read_change(wire::Change::Reader in) {
  change_message m;
  m.request = in.getRequest();
  switch (in.getSetting()) {
  case wire::ShardSetting::LR:
    m.change.setting = shard_setting::lr;
    break;
  case wire::ShardSetting::MOMENTUM:
    m.change.setting = shard_setting::momentum;
    break;
  case wire::ShardSetting::WD:
    m.change.setting = shard_setting::wd;
    break;
  case wire::ShardSetting::STALENESS:
    m.change.setting = shard_setting::staleness;
    break;
  default:
    refuse("change.setting " + std::to_string(static_cast<unsigned>(in.getSetting()))
           + " is not an optimizer setting");
  }
  m.change.value = in.getValue();
  require(std::isfinite(m.change.value), "change.value is not finite");
  m.change.step = in.getStep();
  require(m.change.step >= 0, "change.step " + std::to_string(m.change.step) + " is negative");
  m.remaining_ms = remaining_of(in.getRemainingMs(), "change");
  return m;
}

// Counts a report may carry: samples >= 0, 0 <= correct <= samples, a finite loss sum.
void check_counts(std::int64_t samples, std::int64_t correct, double loss_sum, const char* what) {
  require(samples >= 0 && correct >= 0 && correct <= samples,
          std::string(what) + " counts " + std::to_string(correct) + " correct of "
            + std::to_string(samples));
  require(std::isfinite(loss_sum), std::string(what) + ".lossSum is not finite");
}

// Top-k counts: k >= 0, none counted without a k, 0 <= topKCorrect <= samples.
void check_top_k(std::int32_t top_k, std::int64_t top_k_correct, std::int64_t samples,
                 const char* what) {
  require(top_k >= 0, std::string(what) + ".topK " + std::to_string(top_k) + " is negative");
  require(top_k_correct >= 0 && top_k_correct <= samples && (top_k > 0 || top_k_correct == 0),
          std::string(what) + " counts " + std::to_string(top_k_correct) + " in the top "
            + std::to_string(top_k) + " of " + std::to_string(samples));
}

report_message read_report(wire::Report::Reader in) {
  report_message m;
  m.request = in.getRequest();
  auto& r = m.report;
  r.epoch = in.getEpoch();
  r.validation = in.getValidation();
  r.samples = in.getSamples();
  r.correct = in.getCorrect();
  r.loss_sum = in.getLossSum();
  r.seconds = in.getSeconds();
  r.step_seconds = in.getStepSeconds();
  r.skipped = in.getSkipped();
  r.top_k = in.getTopK();
  r.top_k_correct = in.getTopKCorrect();
  require(r.epoch >= 0, "report.epoch " + std::to_string(r.epoch) + " is negative");
  check_counts(r.samples, r.correct, r.loss_sum, "report");
  check_top_k(r.top_k, r.top_k_correct, r.samples, "report");
  require(r.skipped >= 0, "report.skipped " + std::to_string(r.skipped) + " is negative");
  require(finite_non_negative(r.seconds) && finite_non_negative(r.step_seconds),
          "report has a negative or non-finite time");
  return m;
}

batch_report_message read_batch_report(wire::BatchReport::Reader in) {
  batch_report_message m;
  auto& r = m.report;
  r.rank = in.getRank();
  r.epoch = in.getEpoch();
  r.index = in.getIndex();
  r.batches = in.getBatches();
  r.samples = in.getSamples();
  r.correct = in.getCorrect();
  r.loss_sum = in.getLossSum();
  r.learning_rate = in.getLearningRate();
  r.top_k = in.getTopK();
  r.top_k_correct = in.getTopKCorrect();
  r.step_seconds = in.getStepSeconds();
  r.wait_seconds = in.getWaitSeconds();
  r.values_pushed = in.getValuesPushed();
  r.values_sent = in.getValuesSent();
  require(r.rank >= 0 && r.epoch >= 0, "batchReport has a negative rank or epoch");
  // No arithmetic on the peer's numbers, not even for the message (the fuzzer found
  // batches = INT64_MIN overflowing a "batches - 1").
  require(r.batches >= 1 && r.index >= 0 && r.index < r.batches,
          "batchReport.index " + std::to_string(r.index) + " is not in [0, "
            + std::to_string(r.batches) + ")");
  check_counts(r.samples, r.correct, r.loss_sum, "batchReport");
  check_top_k(r.top_k, r.top_k_correct, r.samples, "batchReport");
  require(std::isfinite(r.learning_rate), "batchReport.learningRate is not finite");
  require(std::isfinite(r.step_seconds) && r.step_seconds >= 0 && std::isfinite(r.wait_seconds)
            && r.wait_seconds >= 0,
          "batchReport.stepSeconds or waitSeconds is negative or not finite");
  require(r.values_sent >= 0 && r.values_sent <= r.values_pushed,
          "batchReport.valuesSent " + std::to_string(r.values_sent) + " is not in [0, valuesPushed "
            + std::to_string(r.values_pushed) + "]");
  return m;
}

} // namespace troupe::frame_decoding
