// The gate between epochs as the place where a run changes (scheduler_commands.cpp says how
// troupe ctl asks; run_changes.hpp what a change is). After epoch e's training no step runs
// until the gate answers, so a change made there takes effect at step (e + 1) x steps per
// epoch exactly, in every process:
//   set KEY=VALUE  every live server's shards (own and backups) take the shard change
//                  first; the gate answers once all have, and a refusal fails the run (some
//                  shards would run with the change and some without)
//   checkpoint     the gate answers save_epoch: e is saved once validated
//   stop           the gate answers last_epoch: e is the run's last
// The changes recorded by --replay-changes are asked here too, at their steps, by
// "--replay-changes". Each change made is a log line, an event ("changed", "saving asked",
// "stopping") and a record in e's metrics line ("changes": [{change, by, asked_at, step}]),
// which is what --replay-changes reads back.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include <troupe/cluster/remote_proxies.hpp>

#include "cluster/scheduler/scheduler_state.hpp"

namespace troupe {

namespace {

constexpr const char* replayed_by = "--replay-changes";

// The recorded changes of `step` are asked now, as troupe ctl would ask them.
void take_replayed(scheduler_state& st, std::int64_t step) {
  auto& recorded = st.replaying;
  auto end = std::find_if(recorded.begin(), recorded.end(),
                          [&](const run_change& r) { return r.step > step; });
  for (auto it = recorded.begin(); it != end; ++it) {
    switch (it->kind) {
    case run_change_kind::set:
      st.settings_asked.push_back({it->set, "", replayed_by});
      break;
    case run_change_kind::checkpoint:
      st.save_asked = true;
      st.save_by = replayed_by;
      break;
    case run_change_kind::stop:
      st.stop_asked = true;
      st.stop_by = replayed_by;
      break;
    }
  }
  recorded.erase(recorded.begin(), end);
}

// One change made after epoch `epoch`'s training: said in the log, the events and the list
// the epoch's metrics line records.
void note_change(scheduler_actor self, nlohmann::json& changes, std::int64_t epoch,
                 const std::string& change, const std::string& by, const std::string& asked_at,
                 const std::string& event, const std::string& doing) {
  auto& st = self->state;
  const auto step = (epoch + 1) * st.plan.steps_per_epoch;
  log_node_line(*st.options,
                "scheduler: after epoch " + std::to_string(epoch) + "'s training (step "
                  + std::to_string(step) + "), as " + by + " asked"
                  + (asked_at.empty() ? std::string() : " (at " + asked_at + ")") + ": " + doing);
  record_event(st.options->events, event,
               {{{"epoch", epoch}, {"step", step}}, {{"change", change}, {"by", by}}});
  changes.push_back({{"change", change}, {"by", by}, {"asked_at", asked_at}, {"step", step}});
}

// The gate's answer once the settings are made: stop or checkpoint where asked, and every
// change in the epoch's metrics line (sent before the answer: the line is written after it).
void finish_gate(scheduler_actor self, std::int64_t epoch,
                 caf::typed_response_promise<after_gate> promise, nlohmann::json changes) {
  auto& st = self->state;
  auto answer = after_gate::go_on;
  const auto e = std::to_string(epoch);
  if (st.stop_asked) {
    note_change(self, changes, epoch, "stop", st.stop_by, st.stop_asked_at, "stopping",
                "stopping: epoch " + e + " is the run's last");
    answer = after_gate::last_epoch;
  } else if (st.save_asked) {
    note_change(self, changes, epoch, "checkpoint", st.save_by, st.save_asked_at, "saving asked",
                "saving a checkpoint: epoch " + e + " is saved once validated");
    st.save_asked = false;
    answer = after_gate::save_epoch;
  }
  if (!changes.empty())
    self->send(st.metrics, annotate_atom::value, epoch, std::string("changes"), changes.dump(),
               std::string());
  promise.deliver(answer);
}

// The servers whose shards take a change: every live server with a plan node.
std::vector<const member_entry*> live_servers(const scheduler_state& st) {
  std::vector<const member_entry*> out;
  for (const auto& m : st.members)
    if (m.role == node_kind::server && !m.gone && m.node >= 0)
      out.push_back(&m);
  return out;
}

// Where the settings' requests stand: how many are still out, and whether one failed.
struct setting_round {
  std::size_t left = 0;
  bool failed = false;
  std::vector<shard_change_actor> proxies;
  void end() {
    for (auto& p : proxies)
      caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
    proxies.clear();
  }
};

} // namespace

void answer_gate(scheduler_actor self, std::int64_t epoch,
                 caf::typed_response_promise<after_gate> promise) {
  auto& st = self->state;
  const auto step = (epoch + 1) * st.plan.steps_per_epoch;
  take_replayed(st, step);
  auto settings = std::move(st.settings_asked);
  st.settings_asked.clear();
  if (settings.empty())
    return finish_gate(self, epoch, promise, nlohmann::json::array());
  const auto servers = live_servers(st);
  if (servers.empty()) {
    promise.deliver(make_error(errc::peer_down, "scheduler: no server is left to take "
                                                  + setting_text(settings.front().change)));
    return;
  }
  for (auto& s : settings)
    s.change.step = step;
  auto round = std::make_shared<setting_round>();
  round->left = servers.size() * settings.size();
  const auto due = deadline::after(st.options->timeouts.step);
  const bool backed = st.job.nodes.shard_backups > 0;
  auto done = [=]() mutable {
    round->end();
    auto changes = nlohmann::json::array();
    for (const auto& s : settings)
      note_change(self, changes, epoch, setting_text(s.change), s.by, s.asked_at, "changed",
                  setting_text(s.change).substr(4) + " from now on in every server's shards");
    finish_gate(self, epoch, promise, std::move(changes));
  };
  for (const auto* m : servers) {
    auto proxy = spawn_shard_change_proxy(self->system(), m->channel);
    round->proxies.push_back(proxy);
    const auto server = m->name();
    for (const auto& s : settings)
      self->request(proxy, due.left_with_grace(), change_atom::value, s.change, due)
        .then(
          [=](std::uint32_t) mutable {
            if (--round->left == 0 && !round->failed)
              done();
          },
          [=](caf::error& err) mutable {
            // A server lost meanwhile: its backups, on the server that promotes them, took the
            // change with that server's own shards.
            if (backed && troupe_code(err) == errc::peer_down && !round->failed) {
              if (--round->left == 0)
                done();
              return;
            }
            if (std::exchange(round->failed, true))
              return;
            round->end();
            promise.deliver(make_error(troupe_code(err), "scheduler: " + server + " did not take "
                                                           + setting_text(s.change) + ": "
                                                           + error_text(err)));
          });
  }
}

std::string start_replay(scheduler_state& st) {
  const auto per_epoch = st.plan.steps_per_epoch;
  const auto last = st.job.epochs * per_epoch;
  st.replaying = st.options->replay_changes;
  // The changes before the epoch the run starts in were made already: a restarted scheduler's
  // shards kept running with them, and a checkpoint's shards hold what they set.
  const auto first = std::max<std::int64_t>({0, st.resume_epoch, st.output.checkpoint.load_epoch});
  st.replaying.erase(
    std::remove_if(st.replaying.begin(), st.replaying.end(),
                   [&](const run_change& r) { return r.step <= first * per_epoch; }),
    st.replaying.end());
  for (const auto& r : st.replaying) {
    if (per_epoch <= 0 || r.step % per_epoch != 0 || r.step == 0)
      return "--replay-changes: '" + r.text + "' took effect at step " + std::to_string(r.step)
             + ", which ends no epoch of this run (" + std::to_string(per_epoch)
             + " steps per epoch): the recorded run was another";
    if (r.step > last)
      return "--replay-changes: '" + r.text + "' took effect at step " + std::to_string(r.step)
             + ", past this run's last (" + std::to_string(last) + ")";
  }
  return {};
}

} // namespace troupe
