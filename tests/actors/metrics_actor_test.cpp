// The metrics actor's log lines and JSON lines, fed with hand-made reports.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include <caf/all.hpp>

#include <troupe/actors/actor_errors.hpp>
#include <troupe/actors/messages.hpp>
#include <troupe/actors/metrics_actor.hpp>
#include <troupe/cluster/local_node.hpp>
#include <troupe/io/dataset.hpp>

#include "tests/io/test_files.hpp"

using namespace troupe;

namespace {

void flush(caf::scoped_actor& self, const metrics_sink_actor& metrics) {
  self->request(metrics, std::chrono::seconds(10), flush_atom::value)
    .receive([](bool) {}, [](caf::error&) { FAIL("flush failed"); });
}

// The lines of a metrics file.
std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

} // namespace

TEST_CASE("metrics prints MXNet-style lines and one JSON object per epoch") {
  test::temp_dir
    dir; // before the actor system: the metrics actor has let go of its file when it goes
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::ostringstream log;
  const auto path = dir.file("metrics.jsonl");
  metrics_options o;
  o.out = &log;
  o.display_batches = 2;
  o.jsonl_path = path;
  o.tags = {{"network", "mlp"}};
  auto metrics = spawn_metrics(sys, o);
  for (std::int64_t i = 0; i < 4; ++i)
    self->send(metrics, batch_report{0, 0, i, 4, 10, 5, 6.0, 0.1f});
  self->send(metrics, phase_report{0, false, 40, 30, 20.0, 2.0});
  self->send(metrics, phase_report{0, true, 10, 9, 1.0, 0.5});
  flush(self, metrics);
  auto text = log.str();
  CHECK_THAT(text, Catch::Contains("Epoch[0] Batch [2]\tSpeed: "));
  CHECK_THAT(text, Catch::Contains("samples/sec\taccuracy=0.500000"));
  CHECK_THAT(text, Catch::Contains("Epoch[0] Train-accuracy=0.750000"));
  CHECK_THAT(text, Catch::Contains("Epoch[0] Train-cross-entropy: 0.500000"));
  CHECK_THAT(text, Catch::Contains("Epoch[0] Time cost=2.000"));
  CHECK_THAT(text, Catch::Contains("Epoch[0] Validation-accuracy=0.900000"));
  self->send_exit(metrics, caf::exit_reason::user_shutdown);

  std::ifstream in(path);
  std::string line;
  REQUIRE(std::getline(in, line));
  CHECK_THAT(line, Catch::Contains("\"epoch\":0"));
  CHECK_THAT(line, Catch::Contains("\"train_accuracy\":0.75"));
  CHECK_THAT(line, Catch::Contains("\"val_accuracy\":0.9"));
  CHECK_THAT(line, Catch::Contains("\"train_loss\":0.5"));
  CHECK_THAT(line, Catch::Contains("\"time_s\":2"));
  CHECK_THAT(line, Catch::Contains("\"samples_per_s\":20"));
  CHECK_THAT(line, Catch::Contains("\"network\":\"mlp\""));
  CHECK_FALSE(std::getline(in, line));                // exactly one epoch
  CHECK_THAT(text + line, !Catch::Contains("top_k")); // top-k not counted: not mentioned
}

// A stream buffer that keeps what had been written at each flush (sync), as a pipe's reader
// would have it then.
class flush_recorder : public std::stringbuf {
public:
  std::vector<std::string> flushed;

protected:
  int sync() override {
    flushed.push_back(str());
    return 0;
  }
};

// Found by scripts/chaos.py: batch lines reached a pipe (troupe launch's relay) only with the
// epoch's phase lines, so nothing reading the log could tell where in an epoch a run was.
TEST_CASE("metrics flushes each batch line as it writes it") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  flush_recorder buffer;
  std::ostream log(&buffer);
  metrics_options o;
  o.out = &log;
  o.display_batches = 2;
  auto metrics = spawn_metrics(sys, o);
  for (std::int64_t i = 0; i < 4; ++i)
    self->send(metrics, batch_report{0, 0, i, 4, 10, 5, 6.0, 0.1f});
  flush(self, metrics);
  self->send_exit(metrics, caf::exit_reason::user_shutdown);
  // some flush held the first batch line as the last one written, before the second was
  auto at_first_line =
    std::find_if(buffer.flushed.begin(), buffer.flushed.end(), [](const std::string& s) {
      return s.find("Epoch[0] Batch [2]") != std::string::npos
             && s.find("Batch [4]") == std::string::npos;
    });
  CHECK(at_first_line != buffer.flushed.end());
}

TEST_CASE("metrics reports top-k per batch, per phase after a colon, and in the JSON line") {
  test::temp_dir
    dir; // before the actor system: the metrics actor has let go of its file when it goes
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::ostringstream log;
  const auto path = dir.file("metrics.jsonl");
  metrics_options o;
  o.out = &log;
  o.display_batches = 2;
  o.jsonl_path = path;
  auto metrics = spawn_metrics(sys, o);
  for (std::int64_t i = 0; i < 4; ++i) // 5 of 10 correct, 8 of 10 in the top 3
    self->send(metrics, batch_report{0, 0, i, 4, 10, 5, 6.0, 0.1f, 3, 8});
  phase_report train{0, false, 40, 30, 20.0, 2.0};
  train.top_k = 3;
  train.top_k_correct = 36;
  phase_report validation{0, true, 10, 9, 1.0, 0.5};
  validation.top_k = 3;
  validation.top_k_correct = 10;
  self->send(metrics, train);
  self->send(metrics, validation);
  flush(self, metrics);
  self->send_exit(metrics, caf::exit_reason::user_shutdown);
  const auto text = log.str();
  CHECK_THAT(text, Catch::Contains("\taccuracy=0.500000\ttop_k_accuracy_3=0.800000\n"));
  CHECK_THAT(text, Catch::Contains("Epoch[0] Train-top_k_accuracy_3: 0.900000\n"));
  CHECK_THAT(text, Catch::Contains("Epoch[0] Validation-top_k_accuracy_3: 1.000000\n"));
  CHECK_THAT(text, !Catch::Contains("-top_k_accuracy_3=")); // parse_log would take it
  CHECK_THAT(text, Catch::Contains("Epoch[0] Train-accuracy=0.750000"));
  std::ifstream in(path);
  std::string line;
  REQUIRE(std::getline(in, line));
  CHECK_THAT(line, Catch::Contains("\"top_k\":3"));
  CHECK_THAT(line, Catch::Contains("\"train_top_k_accuracy\":0.9"));
  CHECK_THAT(line, Catch::Contains("\"val_top_k_accuracy\":1"));
  CHECK_THAT(line, Catch::Contains("\"train_accuracy\":0.75"));
}

// on_worker_loss = continue: a lost worker's part of the validation set goes unvalidated; the
// figures then cover the survivors' parts only, and every validation line and the JSON line
// say how much.
TEST_CASE("metrics says what a validation covers when it is less than the whole set") {
  test::temp_dir
    dir; // before the actor system: the metrics actor has let go of its file when it goes
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::ostringstream log;
  const auto path = dir.file("metrics.jsonl");
  metrics_options o;
  o.out = &log;
  o.display_batches = 0;
  o.jsonl_path = path;
  o.validation_examples = 100;
  auto metrics = spawn_metrics(sys, o);
  self->send(metrics, phase_report{0, false, 400, 300, 200.0, 2.0});
  self->send(metrics, phase_report{0, true, 100, 90, 10.0, 0.5}); // the whole set
  self->send(metrics, phase_report{1, false, 200, 150, 100.0, 2.0});
  phase_report half{1, true, 50, 40, 5.0, 0.5};
  half.top_k = 3;
  half.top_k_correct = 45;
  half.lost_parts = {1};
  self->send(metrics, half);
  self->send(metrics, phase_report{2, false, 200, 150, 100.0, 2.0});
  self->send(metrics, phase_report{2, true, 98, 90, 10.0, 0.5}); // fewer, nobody lost
  phase_report none_known{3, true, 20, 10, 1.0, 0.5};
  none_known.lost_parts = {0, 2};
  self->send(metrics, phase_report{3, false, 200, 150, 100.0, 2.0});
  self->send(metrics, none_known);
  flush(self, metrics);
  self->send_exit(metrics, caf::exit_reason::user_shutdown);
  const auto text = log.str();
  CHECK_THAT(text, Catch::Contains("Epoch[0] Validation-accuracy=0.900000\n"));
  CHECK_THAT(text, Catch::Contains("Epoch[0] Validation-cross-entropy: 0.100000\n"));
  CHECK_THAT(text,
             Catch::Contains(
               "Epoch[1] Validation-accuracy=0.800000 (on 50 of 100 examples: worker 1 lost)\n"));
  CHECK_THAT(
    text,
    Catch::Contains(
      "Epoch[1] Validation-cross-entropy: 0.100000 (on 50 of 100 examples: worker 1 lost)\n"));
  CHECK_THAT(
    text,
    Catch::Contains(
      "Epoch[1] Validation-top_k_accuracy_3: 0.900000 (on 50 of 100 examples: worker 1 lost)\n"));
  CHECK_THAT(text,
             Catch::Contains("Epoch[1] Train-accuracy=0.750000\n")); // training says nothing of it
  CHECK_THAT(text,
             Catch::Contains("Epoch[2] Validation-accuracy=0.918367 (on 98 of 100 examples)\n"));
  CHECK_THAT(
    text, Catch::Contains(
            "Epoch[3] Validation-accuracy=0.500000 (on 20 of 100 examples: workers 0, 2 lost)\n"));
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 4);
  CHECK_THAT(lines[0], Catch::Contains("\"val_samples\":100"));
  CHECK_THAT(lines[0], Catch::Contains("\"val_examples\":100"));
  CHECK_THAT(lines[1], Catch::Contains("\"val_samples\":50"));
  CHECK_THAT(lines[1], Catch::Contains("\"val_examples\":100"));
}

TEST_CASE("metrics says nothing of coverage when the set's size is not known and nobody is lost") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::ostringstream log;
  metrics_options o;
  o.out = &log;
  o.display_batches = 0;
  auto metrics = spawn_metrics(sys, o);
  self->send(metrics, phase_report{0, false, 400, 300, 200.0, 2.0});
  self->send(metrics, phase_report{0, true, 10, 9, 1.0, 0.5});
  phase_report lost{1, true, 5, 4, 0.5, 0.5};
  lost.lost_parts = {1};
  self->send(metrics, phase_report{1, false, 400, 300, 200.0, 2.0});
  self->send(metrics, lost);
  flush(self, metrics);
  self->send_exit(metrics, caf::exit_reason::user_shutdown);
  const auto text = log.str();
  CHECK_THAT(text, Catch::Contains("Epoch[0] Validation-accuracy=0.900000\n"));
  CHECK_THAT(text, Catch::Contains(
                     "Epoch[1] Validation-accuracy=0.800000 (on 5 examples: worker 1 lost)\n"));
}

TEST_CASE("metrics writes an epoch whose validation was skipped without validation fields") {
  test::temp_dir
    dir; // before the actor system: the metrics actor has let go of its file when it goes
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::ostringstream log;
  const auto path = dir.file("metrics.jsonl");
  metrics_options o;
  o.out = &log;
  o.display_batches = 0;
  o.jsonl_path = path;
  auto metrics = spawn_metrics(sys, o);
  self->send(metrics, phase_report{0, false, 40, 30, 20.0, 2.0}); // no validation after 0
  self->send(metrics, phase_report{1, false, 40, 36, 10.0, 2.0});
  self->send(metrics, phase_report{1, true, 10, 9, 1.0, 0.5});
  self->send(metrics, phase_report{2, false, 40, 38, 8.0, 2.0}); // nor after 2 (flush ends it)
  flush(self, metrics);
  self->send_exit(metrics, caf::exit_reason::user_shutdown);
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[0], Catch::Contains("\"epoch\":0"));
  CHECK_THAT(lines[0], !Catch::Contains("val_accuracy"));
  CHECK_THAT(lines[1], Catch::Contains("\"val_accuracy\":0.9"));
  CHECK_THAT(lines[2], Catch::Contains("\"epoch\":2"));
  CHECK_THAT(lines[2], !Catch::Contains("val_accuracy"));
}

TEST_CASE("metrics refuses an unwritable metrics file with its path") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  std::ostringstream log;
  metrics_options o;
  o.out = &log;
  o.jsonl_path = "/nonexistent-dir/m.jsonl";
  CHECK_THROWS_AS(spawn_metrics(sys, o), io_error);
  CHECK_THROWS_WITH(spawn_metrics(sys, o), Catch::Contains("/nonexistent-dir/m.jsonl"));
}

TEST_CASE("metrics draws a progress bar and clears it before a log line") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::ostringstream log;
  metrics_options o;
  o.out = &log;
  o.display_batches = 0;
  o.progress_bar = true;
  auto metrics = spawn_metrics(sys, o);
  self->send(metrics, batch_report{0, 1, 0, 4, 10, 5, 6.0, 0.1f});
  self->send(metrics, batch_report{0, 1, 1, 4, 10, 5, 6.0, 0.1f});
  self->send(metrics, phase_report{1, false, 20, 10, 12.0, 1.0});
  flush(self, metrics);
  auto text = log.str();
  CHECK_THAT(text, Catch::Contains("\rEpoch[1] [===============>              ] 2/4"));
  // the epoch's speed, what its last two batches take at it, and its running loss (12 / 20)
  CHECK_THAT(text, Catch::Contains("/s ETA 0:00 loss 0.6000\033[K"));
  CHECK_THAT(text, Catch::Contains("\r\033[KEpoch[1] Train-accuracy=0.500000"));
  self->send_exit(metrics, caf::exit_reason::user_shutdown);
}

// A scheduler restarted with --resume appends to the lost one's metrics file, and may be asked
// epoch phases the lost one had recorded: their lines are not written twice (written_through),
// the later epochs' are, and the log still shows every phase.
TEST_CASE("metrics writes no line for an epoch the file holds already") {
  test::temp_dir
    dir; // before the actor system: the metrics actor has let go of its file when it goes
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::ostringstream log;
  const auto path = dir.file("metrics.jsonl");
  metrics_options o;
  o.out = &log;
  o.display_batches = 0;
  o.jsonl_path = path;
  o.written_through = 1;
  auto metrics = spawn_metrics(sys, o);
  self->send(metrics, phase_report{1, false, 40, 30, 20.0, 2.0});
  self->send(metrics, phase_report{1, true, 10, 9, 1.0, 0.5});
  self->send(metrics, phase_report{2, false, 40, 36, 10.0, 2.0});
  self->send(metrics, phase_report{2, true, 10, 8, 1.0, 0.5});
  flush(self, metrics);
  self->send_exit(metrics, caf::exit_reason::user_shutdown);
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Contains("\"epoch\":2"));
  CHECK_THAT(log.str(), Catch::Contains("Epoch[1] Validation-accuracy=0.9"));
  CHECK_THAT(log.str(), Catch::Contains("Epoch[2] Validation-accuracy=0.8"));
}

TEST_CASE("metrics warns of a run near chance, in the log and in its epoch's line") {
  test::temp_dir dir;
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::ostringstream log;
  const auto path = dir.file("metrics.jsonl");
  metrics_options o;
  o.out = &log;
  o.display_batches = 0;
  o.jsonl_path = path;
  o.watch.classes = 10;
  o.watch.learning_rate = 0.1;
  auto metrics = spawn_metrics(sys, o);
  self->send(metrics, phase_report{0, false, 100, 10, 230.0, 2.0});
  self->send(metrics, phase_report{0, true, 100, 10, 230.0, 0.5});
  self->send(metrics, phase_report{1, false, 100, 80, 50.0, 2.0});
  self->send(metrics, phase_report{1, true, 100, 80, 50.0, 0.5});
  flush(self, metrics); // still there: a warning alone stops nothing
  self->send_exit(metrics, caf::exit_reason::user_shutdown);
  CHECK_THAT(log.str(), Catch::Contains("Epoch[0] Validation-cross-entropy: 2.300000\nWarning: "
                                        "epoch 0: validation accuracy 0.1000 and loss 2.3000 are "
                                        "near chance for 10 classes"));
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(
    lines[0],
    Catch::Contains(
      R"("warnings":[{"epoch":0,"kind":"near_chance","message":"epoch 0: validation accuracy 0.1000)"));
  CHECK_THAT(lines[1], !Catch::Contains("warnings"));
}

TEST_CASE("metrics with fail_on_stall stops at the first warning, its epoch's line written") {
  test::temp_dir dir;
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::ostringstream log;
  const auto path = dir.file("metrics.jsonl");
  metrics_options o;
  o.out = &log;
  o.display_batches = 0;
  o.jsonl_path = path;
  o.watch.classes = 10;
  o.watch.learning_rate = 0.1;
  o.fail_on_stall = true;
  auto metrics = spawn_metrics(sys, o);
  self->monitor(metrics);
  self->send(metrics, phase_report{0, false, 100, 10, 630.0, 2.0}); // diverging: mean 6.3
  caf::error reason;
  self->receive([&](caf::down_msg& down) { reason = down.reason; },
                caf::after(std::chrono::seconds(30)) >> [] { FAIL("metrics did not stop"); });
  CHECK(troupe_code(reason) == errc::bad_data);
  CHECK_THAT(error_text(reason), Catch::Contains("stopped by --fail-on-stall: epoch 0: the "
                                                 "training loss 6.3000 is above 1.5 ln 10"));
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 1); // the training phase's line, not held for a validation
  CHECK_THAT(lines[0], Catch::Contains(R"("kind":"diverging")"));
}

TEST_CASE("metrics writes a step record every N of rank 0's batches, over every rank's") {
  test::temp_dir dir;
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::ostringstream log;
  const auto path = dir.file("metrics.jsonl");
  metrics_options o;
  o.out = &log;
  o.display_batches = 0;
  o.jsonl_path = path;
  o.step_records = 2;
  auto metrics = spawn_metrics(sys, o);
  for (std::int64_t i = 0; i < 4; ++i) {
    // rank 1: loss 2, steps of 0.2 s after waits of 0.1 s; rank 0: loss 1, 0.4 s and 0.3 s
    self->send(metrics, batch_report{1, 2, i, 4, 10, 2, 20.0, 0.5f, 0, 0, 0.2, 0.1});
    self->send(metrics, batch_report{0, 2, i, 4, 10, 8, 10.0, 0.5f, 0, 0, 0.4, 0.3});
  }
  self->send(metrics, phase_report{2, false, 80, 40, 120.0, 1.0});
  flush(self, metrics);
  self->send_exit(metrics, caf::exit_reason::user_shutdown);
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[0], Catch::StartsWith(R"({"step":10,"epoch":2,"epoch_progress":2.5,"time":)"));
  CHECK_THAT(
    lines[0],
    Catch::Contains(R"("loss":1.5,"accuracy":0.5,"learning_rate":0.5,)")
      && Catch::EndsWith(
        R"("record":"step","ranks":{"0":{"step_s":0.4,"wait_s":0.3},"1":{"step_s":0.2,"wait_s":0.1}}})"));
  CHECK_THAT(lines[1], Catch::StartsWith(R"({"step":12,"epoch":2,"epoch_progress":3,)"));
  CHECK_THAT(lines[2],
             Catch::StartsWith(R"({"epoch":2,"time":)") && Catch::Contains(R"("record":"epoch")"));
}

TEST_CASE("metrics sums what each epoch's compressed pushes sent, and warns when it vanishes") {
  test::temp_dir dir;
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::ostringstream log;
  const auto path = dir.file("metrics.jsonl");
  metrics_options o;
  o.out = &log;
  o.display_batches = 0;
  o.jsonl_path = path;
  o.watch.classes = 10;
  auto metrics = spawn_metrics(sys, o);
  for (std::int64_t epoch = 0; epoch < 2; ++epoch)
    for (int rank = 0; rank < 2; ++rank) {
      // epoch 0 sends half its values, epoch 1 one in a thousand
      batch_report r{rank, epoch, 0, 1, 10, 8, 5.0, 0.1f};
      r.values_pushed = 1000;
      r.values_sent = epoch == 0 ? 500 : 1;
      self->send(metrics, r);
      self->send(metrics, batch_report{rank, epoch, 0, 1, 10, 8, 5.0, 0.1f}); // none counted
    }
  self->send(metrics, phase_report{0, false, 40, 32, 20.0, 1.0});
  self->send(metrics, phase_report{1, false, 40, 32, 20.0, 1.0});
  flush(self, metrics);
  self->send_exit(metrics, caf::exit_reason::user_shutdown);
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Catch::Contains(R"("pushed_values":2000,"sent_share":0.5,)"));
  CHECK_THAT(lines[0], !Catch::Contains("warnings"));
  CHECK_THAT(lines[1], Catch::Contains(R"("pushed_values":2000,"sent_share":0.001,)")
                         && Catch::Contains(R"("kind":"vanishing")"));
  CHECK_THAT(log.str(), Catch::Contains("Warning: epoch 1: the compressed pushes sent 0.100% of "
                                        "their gradient values (2 of 2000) non-zero"));
}

TEST_CASE("metrics' step records in a cluster carry each node's times over its ranks") {
  test::temp_dir dir;
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  const auto path = dir.file("metrics.jsonl");
  metrics_options o;
  o.display_batches = 0;
  o.jsonl_path = path;
  o.step_records = 2;
  o.rank_nodes = {{0, "worker_0"}, {1, "worker_0"}, {2, "worker_1"}};
  auto metrics = spawn_metrics(sys, o);
  for (std::int64_t i = 0; i < 2; ++i) {
    // worker_0's ranks step in 0.2 s and 0.4 s, worker_1's in 0.5 s after waits of 0.25 s
    self->send(metrics, batch_report{2, 0, i, 4, 10, 5, 10.0, 0.5f, 0, 0, 0.5, 0.25});
    self->send(metrics, batch_report{1, 0, i, 4, 10, 5, 10.0, 0.5f, 0, 0, 0.2, 0.0});
    self->send(metrics, batch_report{0, 0, i, 4, 10, 5, 10.0, 0.5f, 0, 0, 0.4, 0.1});
  }
  flush(self, metrics);
  self->send_exit(metrics, caf::exit_reason::user_shutdown);
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0],
             Catch::EndsWith(R"("nodes":{"worker_0":{"step_s":0.3,"wait_s":0.05,"ranks":[0,1]},)"
                             R"("worker_1":{"step_s":0.5,"wait_s":0.25,"ranks":[2]}}})"));
}

TEST_CASE("metrics keeps the run's status: batches, phases, annotations and warnings") {
  local_node_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  metrics_options o;
  o.display_batches = 0;
  o.watch.classes = 10;
  o.status = std::make_shared<run_status>(std::vector<std::pair<std::string, std::string>>{}, 2);
  status_plan plan;
  plan.nodes = {{"scheduler", "scheduler"}, {"worker_0", "worker"}};
  o.status->set_plan(plan);
  auto metrics = spawn_metrics(sys, o);
  for (std::int64_t i = 0; i < 4; ++i)
    self->send(metrics, batch_report{0, 0, i, 4, 10, 1, 23.0, 0.1f, 0, 0, 0.2, 0.1});
  self->send(metrics, annotate_atom::value, std::int64_t{0}, std::string("waited_for"),
             std::string(R"({"worker_0":{"seconds":1.5,"steps":4}})"), std::string());
  self->send(metrics, phase_report{0, false, 40, 4, 92.0, 2.0});
  self->send(metrics, phase_report{0, true, 10, 1, 23.0, 0.5});
  flush(self, metrics);
  const auto s = o.status->snapshot();
  REQUIRE(s.ranks.size() == 1);
  CHECK(s.ranks[0].steps == 4);
  CHECK(s.ranks[0].step_seconds == Approx(0.8));
  CHECK(s.ranks[0].wait_seconds == Approx(0.4));
  REQUIRE(s.history.size() == 1);
  CHECK(s.history[0].validated);
  CHECK(s.history[0].straggler == "worker_0");
  CHECK(s.nodes.at(1).waited_for_s == Approx(1.5));
  // accuracy 0.1 and loss 2.3 of 10 classes after a whole epoch: the watch warns, and says so
  REQUIRE(s.warnings.size() == 1);
  CHECK(s.warnings[0].kind == "near_chance");
  CHECK(s.warning_counts.at("near_chance") == 1);
}
