// The status is rebuilt from reports as they come, never recomputed from history: a batch
// report moves its rank's figures and the epoch's running ones; a phase report closes an epoch
// in the history. Rank 0's reports pace the run's position (as they pace the log's lines).
#include <troupe/actors/run_status.hpp>

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include <troupe/graph/config/job_plan.hpp>
#include <troupe/graph/placement.hpp>

namespace troupe {

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

// An event's named string field, empty when it has none.
std::string text_field(const event_fields& fields, const std::string& name) {
  for (const auto& [key, value] : fields.strings)
    if (key == name)
      return value;
  return {};
}

} // namespace

status_plan status_plan_of(const placement_plan& plan) {
  status_plan s;
  s.topology = plan.topology;
  s.workers = plan.workers;
  s.steps_per_epoch = plan.steps_per_epoch;
  const bool cluster = plan.nodes.size() > 1;
  if (cluster)
    for (const auto& n : plan.nodes)
      s.nodes.emplace_back(n.name, to_string(n.kind));
  for (const auto& a : plan.actors)
    s.actors.push_back({a.name, to_string(a.role), cluster ? a.node : -1});
  for (const auto& r : plan.routes)
    s.routes.push_back(
      {static_cast<int>(r.from), static_cast<int>(r.to), route_label(plan, r),
       r.carries == route_carries::control || r.carries == route_carries::reports});
  return s;
}

run_status::run_status(std::vector<std::pair<std::string, std::string>> run, std::int64_t epochs) {
  s_.run = std::move(run);
  s_.epochs = epochs;
  s_.started = unix_now();
}

void run_status::set_plan(status_plan plan) {
  std::lock_guard<std::mutex> guard{mutex_};
  // The same plan again (a cluster's scheduler plans, then spawns its own part of the plan)
  // keeps what the nodes' records said.
  std::vector<node_figures> nodes;
  for (const auto& [name, role] : plan.nodes) { // the scheduler is the one that reads this
    if (auto* known = node_named(name))
      nodes.push_back(*known);
    else
      nodes.push_back({name, role, "", role == "scheduler" ? "ready" : "planned", "", {}, 0});
  }
  s_.nodes = std::move(nodes);
  s_.plan = std::move(plan);
}

rank_figures& run_status::rank_of(int rank) {
  auto it = std::find_if(s_.ranks.begin(), s_.ranks.end(),
                         [&](const rank_figures& f) { return f.rank == rank; });
  if (it != s_.ranks.end())
    return *it;
  rank_figures f;
  f.rank = rank;
  s_.ranks.push_back(f);
  std::sort(s_.ranks.begin(), s_.ranks.end(),
            [](const rank_figures& a, const rank_figures& b) { return a.rank < b.rank; });
  return rank_of(rank);
}

node_figures* run_status::node_named(const std::string& name) {
  for (auto& n : s_.nodes)
    if (n.name == name)
      return &n;
  return nullptr;
}

void run_status::batch(const batch_report& r) {
  std::lock_guard<std::mutex> guard{mutex_};
  const double now = unix_now();
  auto& f = rank_of(r.rank);
  if (f.samples == 0 || r.epoch != f.epoch || r.index < f.batch) { // a new epoch (or again)
    f.samples = f.steps = 0;
    f.step_seconds = f.wait_seconds = 0;
    f.since = now - r.step_seconds; // its first step's own time counts
  }
  f.epoch = r.epoch;
  f.batch = r.index;
  f.batches = r.batches;
  f.samples += r.samples;
  ++f.steps;
  f.samples_total += r.samples;
  f.step_seconds += r.step_seconds;
  f.wait_seconds += r.wait_seconds;
  f.seen = now;
  f.samples_per_s = ratio(static_cast<double>(f.samples), now - f.since);
  if (r.rank == 0) {
    if (r.index == 0 || r.epoch != s_.epoch) {
      epoch_samples_ = epoch_correct_ = 0;
      epoch_loss_ = 0;
      epoch_start_ = now - r.step_seconds;
    }
    s_.state = "training";
    s_.epoch = r.epoch;
    s_.batch = r.index;
    s_.batches = r.batches;
    s_.step = r.epoch * std::max<std::int64_t>(r.batches, 1) + r.index + 1;
    s_.learning_rate = r.learning_rate;
  }
  epoch_samples_ += r.samples;
  epoch_correct_ += r.correct;
  epoch_loss_ += r.loss_sum;
  s_.loss = ratio(epoch_loss_, static_cast<double>(epoch_samples_));
  s_.accuracy = ratio(static_cast<double>(epoch_correct_), static_cast<double>(epoch_samples_));
  s_.samples_per_s = ratio(static_cast<double>(epoch_samples_), now - epoch_start_);
  add_point(r);
}

// About fifty points an epoch, whatever its length: a point closes at every fiftieth of rank
// 0's batches (every batch in a short epoch).
void run_status::add_point(const batch_report& r) {
  open_samples_ += r.samples;
  open_correct_ += r.correct;
  open_loss_ += r.loss_sum;
  if (r.rank != 0)
    return;
  const auto every = std::max<std::int64_t>(1, r.batches / 50);
  if (++open_batches_ < every && r.index + 1 != r.batches)
    return;
  const auto batches = static_cast<double>(std::max<std::int64_t>(r.batches, 1));
  s_.curve.push_back({s_.step,
                      static_cast<double>(r.epoch) + static_cast<double>(r.index + 1) / batches,
                      ratio(open_loss_, static_cast<double>(open_samples_)),
                      ratio(static_cast<double>(open_correct_), static_cast<double>(open_samples_)),
                      r.learning_rate, unix_now()});
  open_samples_ = open_correct_ = open_batches_ = 0;
  open_loss_ = 0;
  if (s_.curve.size() > max_curve_points) { // thinned: every other point of the older half
    std::vector<step_point> kept;
    for (std::size_t i = 0; i < s_.curve.size(); ++i)
      if (i % 2 == 0 || i >= s_.curve.size() / 2)
        kept.push_back(s_.curve[i]);
    s_.curve = std::move(kept);
  }
}

void run_status::phase(const phase_report& r) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto it = std::find_if(s_.history.begin(), s_.history.end(),
                         [&](const epoch_figures& e) { return e.epoch == r.epoch; });
  if (it == s_.history.end()) {
    s_.history.push_back({});
    it = s_.history.end() - 1;
    it->epoch = r.epoch;
  }
  const auto samples = static_cast<double>(r.samples);
  if (r.validation) {
    it->validated = true;
    it->val_loss = ratio(r.loss_sum, samples);
    it->val_accuracy = ratio(static_cast<double>(r.correct), samples);
    s_.state = "training";
    return;
  }
  it->train_loss = ratio(r.loss_sum, samples);
  it->train_accuracy = ratio(static_cast<double>(r.correct), samples);
  it->time_s = r.seconds;
  it->samples_per_s = ratio(samples, r.seconds);
  it->learning_rate = s_.learning_rate;
  s_.state = "validating";
}

void run_status::changes(std::int64_t epoch, const std::string& json) {
  const auto value = nlohmann::json::parse(json, nullptr, false);
  if (!value.is_array())
    return;
  std::lock_guard<std::mutex> guard{mutex_};
  for (const auto& c : value) {
    if (!c.is_object() || !c.contains("change") || !c["change"].is_string() || !c.contains("step")
        || !c["step"].is_number_integer())
      continue; // not a change as the scheduler writes one
    status_change made;
    made.epoch = epoch;
    made.step = c["step"].get<std::int64_t>();
    made.change = c["change"].get<std::string>();
    if (c.contains("by") && c["by"].is_string())
      made.by = c["by"].get<std::string>();
    s_.changes.push_back(std::move(made));
  }
}

void run_status::annotation(std::int64_t epoch, const std::string& key, const std::string& json) {
  if (key == "changes")
    return changes(epoch, json);
  if (key != "traffic" && key != "waited_for")
    return;
  const auto value = nlohmann::json::parse(json, nullptr, false);
  if (!value.is_object())
    return;
  std::lock_guard<std::mutex> guard{mutex_};
  if (key == "waited_for") {
    std::string longest;
    double most = -1;
    for (const auto& [name, wait] : value.items()) {
      if (!wait.is_object() || !wait.contains("seconds") || !wait["seconds"].is_number())
        continue; // not a wait as the scheduler writes one
      const double seconds = wait["seconds"].get<double>();
      if (auto* n = node_named(name))
        n->waited_for_s += seconds;
      if (seconds > most) {
        most = seconds;
        longest = name;
      }
    }
    if (longest.empty())
      return;
    for (auto& e : s_.history)
      if (e.epoch == epoch)
        e.straggler = longest;
    if (s_.history.empty() || s_.history.back().epoch < epoch) { // before the epoch's report
      s_.history.push_back({});
      s_.history.back().epoch = epoch;
      s_.history.back().straggler = longest;
    }
    return;
  }
  for (const auto& [name, figures] : value.items()) {
    auto* n = node_named(name);
    if (!n || !figures.is_object() || !figures.contains("kinds") || !figures["kinds"].is_object())
      continue;
    for (const auto& [kind, both] : figures["kinds"].items())
      for (const char* direction : {"rx", "tx"})
        if (both.is_object() && both.contains(direction) && both[direction].is_number_unsigned())
          n->bytes[kind][direction] += both[direction].get<std::uint64_t>();
  }
}

void run_status::warning(const run_warning& w) {
  std::lock_guard<std::mutex> guard{mutex_};
  s_.warnings.push_back({unix_now(), w.epoch, w.kind, w.message});
  ++s_.warning_counts[w.kind];
}

void run_status::event(const std::string& event, const event_fields& fields) {
  const auto member = text_field(fields, "member");
  std::lock_guard<std::mutex> guard{mutex_};
  auto* n = node_named(member);
  if (!n)
    return; // a spare before it takes a node, or a record of the run itself
  const auto host = text_field(fields, "host");
  if (!host.empty())
    n->host = host;
  const auto reason = text_field(fields, "reason");
  if (event == "admitted" || event == "rejoined")
    n->state = "joined";
  else if (event == "ready")
    n->state = "ready";
  else if (event == "stopped")
    n->state = "stopped";
  else if (event == "leave granted")
    n->state = "leaving";
  else if (event == "left") // drained: its computes move, and nothing was lost
    n->state = "left";
  else if (event == "moved") { // a worker that joined took the node back: its own process again
    n->state = "ready";
    n->adopted_by.clear();
  } else if (event == "lost" || event == "dropped") {
    n->state = "lost";
    ++s_.nodes_lost;
  }
  if (event == "adopted" || event == "promoted")
    for (auto& other : s_.nodes)
      if (other.name == text_field(fields, "lost"))
        other.adopted_by = member;
  if (event == "lost" || event == "dropped" || event == "adoption" || event == "adopted"
      || event == "promoted" || event == "rejoined" || event == "left" || event == "moved")
    s_.faults.push_back(
      {unix_now(), s_.epoch, event, member + " " + event + (reason.empty() ? "" : ": " + reason)});
}

void run_status::end(const std::string& state, const std::string& failure) {
  std::lock_guard<std::mutex> guard{mutex_};
  s_.state = state;
  s_.failure = failure;
}

status_snapshot run_status::snapshot() const {
  std::lock_guard<std::mutex> guard{mutex_};
  auto copy = s_;
  copy.now = unix_now();
  return copy;
}

} // namespace troupe
