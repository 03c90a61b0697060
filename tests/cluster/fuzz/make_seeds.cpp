// The fuzzer's seeds (tests/cluster/fuzz/corpus): one frame of every kind, valid under this
// build's protocol version and the fuzzer's key table (frame_fuzzer.cpp), so that fuzzing
// starts past the version check; plus the regression inputs found so far, re-encoded.
//
//   troupe_fuzz_seeds write DIR   writes the seeds into DIR (regenerate after a protocol change:
//                                 `build/tests/cluster/troupe_fuzz_seeds write
//                                 tests/cluster/fuzz/corpus`)
//   troupe_fuzz_seeds check DIR   exit 1 naming each seed in DIR (but regression_*) that this
//                                 build's decoder refuses (ctest cluster:fuzz_seeds_current)
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <dirent.h>

#include <troupe/cluster/frame_codec.hpp>

using namespace troupe;

namespace {

// frame_fuzzer.cpp's table: shard 0 has keys of shapes {2, 3} and {5}, shard 1 one of {4}.
const wire_keys fuzz_keys{{{{2, 3}, {5}}, {{4}}}};

tensor counting(shape_t shape) {
  std::int64_t n = 1;
  for (auto d : shape)
    n *= d;
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = 0.5f * static_cast<float>(i);
  return tensor::from_values(std::move(shape), values);
}

std::vector<std::pair<std::string, wire_message>> seeds() {
  nonce challenge{};
  for (std::size_t i = 0; i < challenge.size(); ++i)
    challenge[i] = static_cast<std::uint8_t>(i);
  mac proof{};
  for (std::size_t i = 0; i < proof.size(); ++i)
    proof[i] = static_cast<std::uint8_t>(255 - i);
  gradient_push push;
  push.step = 3;
  push.epoch_position = 0.25;
  push.keys = {0, 1};
  push.gradients = {counting({2, 3}), counting({5})};
  push.source = 1;
  push.samples = 64;
  gradient_push two_bit =
    push; // a compressed route's push: 2 bits a value, a scale per 256 (here per key)
  two_bit.gradients = {tensor::from_values({2, 3}, {0.5f, 0, -0.5f, 0.5f, 0, 0}),
                       tensor::from_values({5}, {0, 0.5f, 0.5f, -0.5f, 0})};
  two_bit.encoding = value_encoding::two_bit;
  two_bit.scales = {0.5f, 0.5f};
  weight_set weights;
  weights.updates = 4;
  weights.keys = {0};
  weights.weights = {counting({4})};
  weights.learning_rate = 0.1f;
  weight_set fp16_weights = weights; // a compressed answer: deltas, 2 bytes a value
  fp16_weights.weights = {tensor::from_values({4}, {0.5f, -0.25f, 0, 2})};
  fp16_weights.encoding = value_encoding::fp16;
  assignment_message assignment;
  assignment.rank = 1;
  assignment.node = 2;
  assignment.job = {'j', 'o', 'b', 0, 0, 0, 0, 0};
  assignment.job_hash = 11;
  assignment.plan_hash = 12;
  assignment.facts = data_facts{{1, 28, 28}, 10, 60000, 10000};
  assignment.servers = {endpoint{1, "127.0.0.1", 45095}};
  assignment.threads = 2;
  auto assignment_ranks = assignment;
  assignment_ranks.adopt = true;
  assignment_ranks.ranks = {3};
  batch_report batch{1, 2, 3, 469, 128, 100, 1.5, 0.1f};
  phase_report phase;
  phase.epoch = 2;
  phase.samples = 128;
  phase.correct = 100;
  phase.loss_sum = 3.0;
  phase.seconds = 1.0;
  traffic_message traffic{2, {peer_traffic{"server 0", {1, 2, 3}, {4, 5, 6}}}};
  join_message rejoin{node_kind::worker, "127.0.0.1", 0, 4243, 1, 11, {}};
  rejoin.rejoin = rejoin_message{3, 2, 1, -1, {4}, {}};
  batch_report int64_min{0, 0, 0, std::numeric_limits<std::int64_t>::min(), 128, 100, 1.0, 0.1f};
  return {
    {"hello", hello_message{node_kind::worker, "worker 0", challenge, 42}},
    {"hello_ctl", hello_message{node_kind::ctl, "troupe ctl (pid 7)", challenge, 0}},
    {"proof", proof_message{proof}},
    {"push", push_message{1, 0, push, 30000}},
    {"pull", pull_message{2, 1, 30000}},
    {"weights", weights_message{1, 1, weights}},
    {"push_2bit", push_message{1, 0, two_bit, 30000}},
    {"weights_fp16", weights_message{1, 1, fp16_weights}},
    {"failure", failure_message{1, errc::timeout, "shard 1 did not answer by its deadline"}},
    {"heartbeat", heartbeat_message{7}},
    {"shutdown", shutdown_message{"server 0 shut down", false, 1}},
    {"shutdown_finished", shutdown_message{"the run finished", true}},
    {"join", join_message{node_kind::server, "127.0.0.1", 45095, 4242, 0, 11, {}}},
    {"rejoin", rejoin},
    {"assignment", assignment},
    {"assignment_ranks", assignment_ranks},
    {"ready", ready_message{2, 0, 2}},
    {"ready_with_port", ready_message{1, 45095, 2}},
    {"control", control_message{3, 1, control_kind::train, 2, 30000}},
    {"report", report_message{3, phase}},
    {"batch_report", batch_report_message{batch}},
    {"traffic_query", traffic_query_message{2}},
    {"adopt", adopt_message{3, {}}},
    {"adopt_ranks", adopt_message{3, {5, 7}}},
    {"replicate", replicate_message{{6, 0, push, 30000}}},
    {"replicated", replicated_message{6, 42}},
    {"promote", promote_message{1, 2}},
    {"leave", leave_message{"SIGTERM"}},
    {"release_granted", release_message{true, ""}},
    {"release_refused", release_message{false, "no other worker is left to take its computes"}},
    {"cede", cede_message{2, {}}},
    {"cede_ranks", cede_message{2, {3}}},
    {"command_status", command_message{9, "status", {}, 10000}},
    {"command_drain", command_message{10, "drain", {"worker_1"}, 10000}},
    {"command_result", command_result_message{10, "asked worker 1 to leave", R"({"schema":1})"}},
    {"drain", drain_message{"troupe ctl drain"}},
    {"change", change_message{11, {shard_setting::lr, 0.05, 938}, 10000}},
    {"changed", changed_message{11, 2}},
    {"fence", fence_message{2, 5, "the scheduler declared it lost: no frame for 3004 ms"}},
    {"pull_rewind", pull_message{8, 1, 30000, true, 5}},
    {"traffic", traffic},
    {"checkpoint_save",
     checkpoint_message{4, checkpoint_kind::save, 1, "runs/m-0001.server_0.safetensors", 30000}},
    {"checkpoint_restore", checkpoint_message{5, checkpoint_kind::restore, 1, "runs/m", 30000}},
    {"checkpoint_done",
     checkpoint_done_message{
       4, "m-0001.server_0.safetensors", 147864,
       "sha256:1ca5b6a8d0e1372825d314437db0b0816f1bfb6a37081db09799e5aad0411660"}},
    // Found by the fuzzer (bac6a18): the refusal of batches = INT64_MIN overflowed.
    {"regression_batch_report_int64_min", batch_report_message{int64_min}},
  };
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Why this build refuses the seed `frame` (empty: it decodes).
std::string refusal(const std::vector<char>& frame) {
  if (frame.size() < frame_header_bytes)
    return "shorter than a frame header";
  auto header = read_frame_header(frame.data(), default_max_frame_bytes);
  if (!header.error.empty())
    return header.error;
  if (frame.size() != frame_header_bytes + header.payload_bytes)
    return "the header announces " + std::to_string(header.payload_bytes) + " bytes, "
           + std::to_string(frame.size() - frame_header_bytes) + " follow";
  auto payload =
    std::make_shared<std::vector<char>>(frame.begin() + frame_header_bytes, frame.end());
  return decode_payload(payload, fuzz_keys).error;
}

int write(const std::string& dir) {
  for (const auto& [name, message] : seeds()) {
    std::vector<char> frame;
    append_frame(message, frame);
    std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
    out.write(frame.data(), static_cast<std::streamsize>(frame.size()));
    if (!out) {
      std::cerr << "troupe_fuzz_seeds: cannot write " << dir << "/" << name << "\n";
      return 1;
    }
  }
  return 0;
}

int check(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    std::cerr << "troupe_fuzz_seeds: cannot open " << dir << "\n";
    return 1;
  }
  int refused = 0, seen = 0;
  while (auto* entry = ::readdir(d)) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || name.rfind("regression_", 0) == 0)
      continue;
    ++seen;
    const auto why = refusal(read_file(dir + "/" + name));
    if (!why.empty()) {
      std::cerr << "troupe_fuzz_seeds: seed " << name << " is refused (" << why
                << "): regenerate the corpus with `troupe_fuzz_seeds write`\n";
      ++refused;
    }
  }
  ::closedir(d);
  std::cout << seen << " seeds, " << refused << " refused\n";
  return refused == 0 && seen > 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode == "write")
    return write(argv[2]);
  if (mode == "check")
    return check(argv[2]);
  std::cerr << "usage: troupe_fuzz_seeds write|check DIR\n";
  return 2;
}
