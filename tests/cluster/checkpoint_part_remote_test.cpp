// A member's part of a cluster checkpoint across processes (cluster/remote/
// checkpoint_part_remote.cpp), message by message on CAF's deterministic test coordinator: the
// skeleton inside a real channel, the proxy over a fake one (remote_fixture.hpp). The part is
// a fake that records what it was asked, so each case checks what crossed the wire both ways.
#define CAF_SUITE remote

#include "tests/cluster/remote_fixture.hpp"

#include <memory>
#include <string>
#include <vector>

namespace {

// What a fake part was asked, and how it answers: with `record` (a save) or true (a restore),
// with `failure` when that is set, or, for a save while `silent` is set, never.
struct part_probe {
  struct asked {
    checkpoint_kind kind;
    std::int64_t epoch;
    std::string path;
    deadline due;
  };
  std::vector<asked> asks;
  part_record record;
  caf::error failure;
  bool silent = false;
  std::vector<caf::typed_response_promise<part_record>> unanswered;
};

checkpoint_part_actor::behavior_type fake_part(checkpoint_part_actor::pointer self,
                                               std::shared_ptr<part_probe> probe) {
  return {
    [=](save_atom, std::int64_t epoch, std::string& path,
        deadline due) -> caf::result<part_record> {
      probe->asks.push_back({checkpoint_kind::save, epoch, path, due});
      if (probe->silent) {
        probe->unanswered.push_back(self->make_response_promise<part_record>());
        return probe->unanswered.back();
      }
      if (probe->failure)
        return probe->failure;
      return probe->record;
    },
    [=](restore_atom, std::int64_t epoch, std::string& prefix, deadline due) -> caf::result<bool> {
      probe->asks.push_back({checkpoint_kind::restore, epoch, prefix, due});
      if (probe->failure)
        return probe->failure;
      return true;
    },
  };
}

part_record saved_part() {
  return {"run-0003.worker_0.safetensors", 4096, "sha256:" + std::string(64, 'a')};
}

struct part_skeleton_fixture : channel_fixture {
  std::shared_ptr<part_probe> part = std::make_shared<part_probe>();
  checkpoint_part_actor part_actor;

  // A silent part's promises keep it alive: it is ended before the channel's fixture is.
  ~part_skeleton_fixture() override {
    if (part_actor)
      caf::anon_send_exit(part_actor, caf::exit_reason::kill);
  }

  void serve_part() {
    part->record = saved_part();
    part_actor = sys.spawn(fake_part, part);
    serving->set<remote_interface::checkpoint_part>(0, part_actor);
  }
};

} // namespace

// ---------------------------------------------------------------------------------------------
// The skeleton, inside a real channel.

CAF_TEST_FIXTURE_SCOPE(checkpoint_part_skeleton_tests, part_skeleton_fixture)

CAF_TEST(checkpoint_part_skeleton_saves_and_restores_through_the_registered_part) {
  serve_part();
  // The part waits for the deadline the frame carried, made local: one minute from when the
  // frame arrived, so between one minute from before and one minute from after.
  const auto earliest = deadline::after(1min);
  arrive(
    checkpoint_message{21, checkpoint_kind::save, 3, "/ckpt/run-0003.worker_0.safetensors", 60000});
  const auto latest = deadline::after(1min);
  CAF_REQUIRE_EQUAL(part->asks.size(), 1u);
  CAF_CHECK(part->asks[0].kind == checkpoint_kind::save);
  CAF_CHECK_EQUAL(part->asks[0].epoch, 3);
  CAF_CHECK_EQUAL(part->asks[0].path, "/ckpt/run-0003.worker_0.safetensors");
  CAF_CHECK(part->asks[0].due.at >= earliest.at);
  CAF_CHECK(part->asks[0].due.at <= latest.at);
  auto saved = written();
  CAF_REQUIRE(std::holds_alternative<checkpoint_done_message>(saved));
  const auto& done = std::get<checkpoint_done_message>(saved);
  CAF_CHECK_EQUAL(done.request, 21u);
  CAF_CHECK_EQUAL(done.file, saved_part().file);
  CAF_CHECK_EQUAL(done.bytes, 4096u);
  CAF_CHECK_EQUAL(done.checksum, saved_part().checksum);
  // A restore names the checkpoint's prefix; its answer carries no file.
  arrive(checkpoint_message{22, checkpoint_kind::restore, 3, "/ckpt/run", 60000});
  CAF_REQUIRE_EQUAL(part->asks.size(), 2u);
  CAF_CHECK(part->asks[1].kind == checkpoint_kind::restore);
  CAF_CHECK_EQUAL(part->asks[1].epoch, 3);
  CAF_CHECK_EQUAL(part->asks[1].path, "/ckpt/run");
  auto restored = written();
  CAF_REQUIRE(std::holds_alternative<checkpoint_done_message>(restored));
  CAF_CHECK_EQUAL(std::get<checkpoint_done_message>(restored).request, 22u);
  CAF_CHECK(std::get<checkpoint_done_message>(restored).file.empty());
  CAF_CHECK_EQUAL(std::get<checkpoint_done_message>(restored).bytes, 0u);
}

CAF_TEST(checkpoint_part_skeleton_refuses_a_request_when_the_node_serves_no_part) {
  arrive(
    checkpoint_message{23, checkpoint_kind::save, 3, "/ckpt/run-0003.worker_0.safetensors", 60000});
  auto refusal = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(refusal));
  CAF_CHECK_EQUAL(std::get<failure_message>(refusal).request, 23u);
  CAF_CHECK(std::get<failure_message>(refusal).code == errc::bad_request);
  CAF_CHECK(contains(std::get<failure_message>(refusal).text, "serves no checkpoint part 0"));
  CAF_CHECK(logged("checkpoint part 0, which this node does not serve"));
  // The refusal is the request's alone: the channel stays, and serves a part registered later.
  serve_part();
  arrive(checkpoint_message{24, checkpoint_kind::restore, 3, "/ckpt/run", 60000});
  auto answer = written();
  CAF_REQUIRE(std::holds_alternative<checkpoint_done_message>(answer));
  CAF_CHECK_EQUAL(std::get<checkpoint_done_message>(answer).request, 24u);
}

CAF_TEST(checkpoint_part_skeleton_passes_the_parts_failure_back) {
  serve_part();
  part->failure = make_error(errc::bad_data, "checkpoint of epoch 3 has 2 shards, this run 4");
  arrive(checkpoint_message{25, checkpoint_kind::restore, 3, "/ckpt/run", 60000});
  auto restore_failed = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(restore_failed));
  CAF_CHECK_EQUAL(std::get<failure_message>(restore_failed).request, 25u);
  CAF_CHECK(std::get<failure_message>(restore_failed).code == errc::bad_data);
  CAF_CHECK(contains(std::get<failure_message>(restore_failed).text, "has 2 shards, this run 4"));
  part->failure = make_error(errc::internal, "cannot write /ckpt/run-0003.worker_0: disk full");
  arrive(
    checkpoint_message{26, checkpoint_kind::save, 3, "/ckpt/run-0003.worker_0.safetensors", 60000});
  auto save_failed = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(save_failed));
  CAF_CHECK_EQUAL(std::get<failure_message>(save_failed).request, 26u);
  CAF_CHECK(std::get<failure_message>(save_failed).code == errc::internal);
  CAF_CHECK(contains(std::get<failure_message>(save_failed).text, "disk full"));
}

CAF_TEST(checkpoint_part_skeleton_fails_a_save_the_part_does_not_answer_by_its_deadline) {
  serve_part();
  part->silent = true;
  arrive(
    checkpoint_message{27, checkpoint_kind::save, 3, "/ckpt/run-0003.worker_0.safetensors", 1000});
  CAF_REQUIRE_EQUAL(part->asks.size(), 1u);
  // The skeleton's request to the part times out on the coordinator's clock: the frame's second
  // and the grace an originator gives the hop that names what it waited for.
  advance_time(1s + answer_grace + 1ms);
  consume_messages();
  auto timed_out = written();
  CAF_REQUIRE(std::holds_alternative<failure_message>(timed_out));
  CAF_CHECK_EQUAL(std::get<failure_message>(timed_out).request, 27u);
  CAF_CHECK(std::get<failure_message>(timed_out).code == errc::timeout);
  CAF_CHECK(contains(std::get<failure_message>(timed_out).text,
                     "checkpoint part on worker 0 did not answer by its deadline"));
}

CAF_TEST(checkpoint_request_without_a_path_ends_the_channel_before_the_part_is_asked) {
  serve_part();
  arrive(checkpoint_message{28, checkpoint_kind::save, 3, "", 60000});
  auto goodbye = written();
  CAF_REQUIRE(std::holds_alternative<shutdown_message>(goodbye));
  CAF_CHECK(contains(std::get<shutdown_message>(goodbye).reason, "checkpoint.path is empty"));
  CAF_CHECK(part->asks.empty());
}

CAF_TEST_FIXTURE_SCOPE_END()

// ---------------------------------------------------------------------------------------------
// The proxy, over a fake channel.

CAF_TEST_FIXTURE_SCOPE(checkpoint_part_proxy_tests, proxy_fixture)

CAF_TEST(checkpoint_part_proxy_forwards_save_and_restore_and_delivers_the_answers) {
  auto proxy = spawn_checkpoint_part_proxy(sys, channel);
  const auto part = saved_part();
  probe->answer = checkpoint_done_message{0, part.file, part.bytes, part.checksum};
  const auto due = deadline::after(1min);
  auto saved = self->request(proxy, caf::infinite, save_atom::value, std::int64_t{3},
                             std::string("/ckpt/run-0003.worker_0.safetensors"), due);
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->calls.size(), 1u);
  CAF_REQUIRE(std::holds_alternative<checkpoint_message>(probe->calls[0]));
  const auto& save = std::get<checkpoint_message>(probe->calls[0]);
  CAF_CHECK(save.kind == checkpoint_kind::save);
  CAF_CHECK_EQUAL(save.epoch, 3);
  CAF_CHECK_EQUAL(save.path, "/ckpt/run-0003.worker_0.safetensors");
  CAF_CHECK(probe->deadlines[0].at == due.at); // the originator's deadline, no new clock
  bool answered = false;
  saved.receive(
    [&](part_record& got) {
      answered = true;
      CAF_CHECK_EQUAL(got.file, part.file);
      CAF_CHECK_EQUAL(got.bytes, part.bytes);
      CAF_CHECK_EQUAL(got.checksum, part.checksum);
    },
    [&](caf::error& err) { CAF_FAIL("save failed: " << text_of(err)); });
  CAF_CHECK(answered);
  probe->answer = checkpoint_done_message{0, {}, 0, {}};
  const auto later = deadline::after(2min);
  auto restored = self->request(proxy, caf::infinite, restore_atom::value, std::int64_t{3},
                                std::string("/ckpt/run"), later);
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->calls.size(), 2u);
  CAF_REQUIRE(std::holds_alternative<checkpoint_message>(probe->calls[1]));
  const auto& restore = std::get<checkpoint_message>(probe->calls[1]);
  CAF_CHECK(restore.kind == checkpoint_kind::restore);
  CAF_CHECK_EQUAL(restore.epoch, 3);
  CAF_CHECK_EQUAL(restore.path, "/ckpt/run");
  CAF_CHECK(probe->deadlines[1].at == later.at);
  answered = false;
  restored.receive(
    [&](bool ok) {
      answered = true;
      CAF_CHECK(ok);
    },
    [&](caf::error& err) { CAF_FAIL("restore failed: " << text_of(err)); });
  CAF_CHECK(answered);
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(checkpoint_part_proxy_refuses_an_answer_that_names_no_saved_part) {
  auto proxy = spawn_checkpoint_part_proxy(sys, channel);
  const auto due = deadline::after(1min);
  const auto save = [&] {
    return self->request(proxy, caf::infinite, save_atom::value, std::int64_t{3},
                         std::string("/ckpt/run-0003.worker_0.safetensors"), due);
  };
  const auto expect_refused = [&](auto& asked, const std::string& why) {
    bool refused = false;
    asked.receive([&](part_record&) { CAF_FAIL("a part with no file was taken as saved"); },
                  [&](caf::error& err) {
                    refused = true;
                    CAF_CHECK(troupe_code(err) == errc::bad_request);
                    CAF_CHECK(contains(text_of(err), why));
                  });
    CAF_CHECK(refused);
  };
  // A save that names no file gives the manifest nothing to list.
  probe->answer = checkpoint_done_message{0, {}, 4096, "sha256:" + std::string(64, 'a')};
  auto no_file = save();
  consume_messages();
  expect_refused(no_file, "a checkpoint part was saved to no file");
  // An answer of another kind is no checkpoint done, for a save or a restore.
  probe->answer = replicated_message{0, 7};
  auto no_done = save();
  consume_messages();
  expect_refused(no_done, "answered with no checkpoint done");
  auto restored = self->request(proxy, caf::infinite, restore_atom::value, std::int64_t{3},
                                std::string("/ckpt/run"), due);
  consume_messages();
  bool refused = false;
  restored.receive([&](bool) { CAF_FAIL("a restore was taken as done without a done"); },
                   [&](caf::error& err) {
                     refused = true;
                     CAF_CHECK(troupe_code(err) == errc::bad_request);
                     CAF_CHECK(contains(text_of(err), "answered with no checkpoint done"));
                   });
  CAF_CHECK(refused);
  CAF_CHECK_EQUAL(probe->calls.size(), 3u);
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(checkpoint_part_proxy_delivers_the_channels_failure) {
  auto proxy = spawn_checkpoint_part_proxy(sys, channel);
  probe->failure = make_error(errc::timeout, "checkpoint part on worker 1 did not answer");
  auto saved =
    self->request(proxy, caf::infinite, save_atom::value, std::int64_t{3},
                  std::string("/ckpt/run-0003.worker_1.safetensors"), deadline::after(1min));
  auto restored = self->request(proxy, caf::infinite, restore_atom::value, std::int64_t{3},
                                std::string("/ckpt/run"), deadline::after(1min));
  consume_messages();
  CAF_CHECK_EQUAL(probe->calls.size(), 2u);
  int failed = 0;
  saved.receive([&](part_record&) { CAF_FAIL("a failed save was answered"); },
                [&](caf::error& err) {
                  ++failed;
                  CAF_CHECK(troupe_code(err) == errc::timeout);
                  CAF_CHECK(contains(text_of(err), "on worker 1 did not answer"));
                });
  restored.receive([&](bool) { CAF_FAIL("a failed restore was answered"); },
                   [&](caf::error& err) {
                     ++failed;
                     CAF_CHECK(troupe_code(err) == errc::timeout);
                     CAF_CHECK(contains(text_of(err), "on worker 1 did not answer"));
                   });
  CAF_CHECK_EQUAL(failed, 2);
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST(checkpoint_part_proxy_fails_the_waiting_and_later_requests_once_its_channel_ends) {
  auto proxy = spawn_checkpoint_part_proxy(sys, channel);
  probe->hold = true;
  auto waiting =
    self->request(proxy, caf::infinite, save_atom::value, std::int64_t{3},
                  std::string("/ckpt/run-0003.worker_1.safetensors"), deadline::after(1min));
  consume_messages();
  CAF_REQUIRE_EQUAL(probe->held.size(), 1u);
  // The channel ends with a reason of its own: the proxy's requests fail with that reason.
  self->send_exit(channel, make_error(errc::peer_down, "worker 1 shut down: out of memory"));
  consume_messages();
  const auto expect_lost = [&](auto& asked) {
    bool failed = false;
    asked.receive([&](part_record&) { CAF_FAIL("a save over an ended channel was answered"); },
                  [&](caf::error& err) {
                    failed = true;
                    CAF_CHECK(troupe_code(err) == errc::peer_down);
                    CAF_CHECK(contains(text_of(err), "worker 1 shut down: out of memory"));
                  });
    CAF_CHECK(failed);
  };
  expect_lost(waiting);
  auto later =
    self->request(proxy, caf::infinite, save_atom::value, std::int64_t{4},
                  std::string("/ckpt/run-0004.worker_1.safetensors"), deadline::after(1min));
  consume_messages();
  expect_lost(later);
  CAF_CHECK_EQUAL(probe->calls.size(), 1u); // the later one never reached the ended channel
  caf::anon_send_exit(proxy, caf::exit_reason::kill);
}

CAF_TEST_FIXTURE_SCOPE_END()
