// model_step.cc: one training step's parameter traffic of a real model, moved by ps-lite
// (dmlc/ps-lite's KVWorker/KVServer over its ZMQ van) the way Troupe's compute stand-in moves
// it, so scripts/bench_pslite.py can time both on the same emulated hosts. Built outside the
// project by scripts/pslite/build.sh; ps-lite is not a dependency of Troupe.
//
//   model_step PLAN COMPUTE_MS WARMUP TIMED [STEP_TIMEOUT_S=300] [MODE=pull]
//
// One binary for every role; ps-lite's DMLC_ROLE (and the other DMLC_* variables) pick it.
// PLAN (written by bench_pslite.py from `troupe check --push-groups`): one line per request a
// worker sends per step, in the order backward completes them: `group SERVER WORK LEN...`, the
// ps-lite server rank that owns it, its share of the step (its layers' part of the model's
// forward work, as Troupe's stand-in spreads its step: actors/include/troupe/actors/
// stand_in_timing.hpp) and the elements (float32) of each key it carries. Lines starting with
// '#' are comments.
//
// Server, as MXNet's dist_sync server (kvstore_dist_server.h): per request group it sums the
// pushes of all W workers, holding each push unanswered; the W-th push applies the sum
// (w += sum) and answers every held push. A pull is answered at once with a fresh copy of w.
// Worker rank 0 first sends every group's initial weights (zeros, command kInit); all workers
// then meet at a ps-lite barrier, once. A worker's step, as Troupe's stand-in
// (actors/include/troupe/actors/compute_actor.hpp, "Stand-in"): forward is the first third of
// COMPUTE_MS, run in one segment per group in forward order (the plan's last group first), each
// its group's WORK share of it, and a segment starts only once its group's weights of the
// previous step are back (a device whose forward waits per layer, as MXNet's dependency engine
// runs it); backward is the rest, group g pushed once backward has done the shares of groups
// 0..g (the last exactly at 2/3 COMPUTE_MS after the forward ended); the next
// step's forward starts once the last group was pushed. A step's time is from one forward's start
// to the next's. In MODE pull a group's pull is sent when its push is answered (MXNet's engine
// order: the pull depends on the push); MODE pushpull instead sends each group as one ZPushPull
// (push and pull in one request, the server answering it with the weights once the W-th push
// applied the sum), as Troupe's push is answered with the weights: no pull request waits behind
// pushes on the worker's connection. ps-lite sends a connection's requests in the order they
// were made (backward's): it has no priority.
// Check: worker r pushes the value r+1 everywhere, so after step s (1-based) every pulled
// weight is s * W(W+1)/2 exactly; when a forward segment reads a group's weights, their first
// and last value are checked, and all of one group (in turn) every step, and after the last step
// every group's; a wrong value ends the worker with an error.
//
// Output (worker, stdout), one line: `pslite_model_step mode=MODE workers=W servers=S groups=G
// elements=N compute_ms=C step_ms_median=X min=Y max=Z worker=R` over the TIMED steps after
// WARMUP; each step's time goes to stderr. Every wait is bounded by STEP_TIMEOUT_S: a step
// that takes longer ends the worker with an error (exit 1), never a hang.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "ps/ps.h"

namespace {

using clock_type = std::chrono::steady_clock;
constexpr int kInit = 1;  // command of rank 0's first push: set the weights, answer at once

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "model_step: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(1);  // not exit(): ps-lite's threads would wait for peers that may be gone
}

struct group_plan {
  int server = 0;
  double work = 0;  // the share of the step, normalized by read_plan to sum to 1
  std::vector<int> lens;
  size_t elements = 0;
};

std::vector<group_plan> read_plan(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    die("cannot open the plan '" + path + "'");
  std::vector<group_plan> plan;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream words(line);
    std::string tag;
    group_plan g;
    words >> tag >> g.server >> g.work;
    if (!words || !std::isfinite(g.work) || g.work < 0)
      die(path + ":" + std::to_string(number) + ": expected `group SERVER WORK LEN...` with WORK >= 0, got '" + line + "'");
    long len = 0;
    while (words >> len) {
      if (len <= 0 || len > (1L << 30))
        die(path + ":" + std::to_string(number) + ": a key of " + std::to_string(len) + " elements");
      g.lens.push_back(static_cast<int>(len));
      g.elements += static_cast<size_t>(len);
    }
    if (tag != "group" || !words.eof() || g.lens.empty() || g.server < 0)
      die(path + ":" + std::to_string(number) + ": expected `group SERVER WORK LEN...`, got '" + line + "'");
    plan.push_back(g);
  }
  if (plan.empty())
    die("the plan '" + path + "' lists no group");
  double total = 0;
  for (const auto& g : plan)
    total += g.work;
  for (auto& g : plan)  // no work at all: equal shares
    g.work = total > 0 ? g.work / total : 1.0 / double(plan.size());
  return plan;
}

// ------------------------------------------------------------------------------------ server
class sync_server {
 public:
  sync_server() : server_(0), workers_(ps::NumWorkers()) {
    server_.set_request_handle([this](const ps::KVMeta& meta, const ps::KVPairs<float>& req,
                                      ps::KVServer<float>* srv) { handle(meta, req, srv); });
  }

 private:
  struct group_state {
    std::vector<float> w, sum;
    ps::SArray<ps::Key> keys;
    ps::SArray<int> lens;
    int pushes = 0;                 // of the current step
    std::vector<ps::KVMeta> held;   // their requests, answered once the W-th arrived
  };

  // ps-lite calls this on the server's one customer thread, in arrival order: no lock needed.
  void handle(const ps::KVMeta& meta, const ps::KVPairs<float>& req, ps::KVServer<float>* srv) {
    if (req.keys.empty())
      die("server: a request with no key");
    group_state& g = groups_[req.keys[0]];
    if (meta.push && meta.cmd == kInit) {
      g.w.assign(req.vals.begin(), req.vals.end());
      g.sum.assign(g.w.size(), 0.f);
      g.keys.CopyFrom(req.keys);
      g.lens.CopyFrom(req.lens);
      srv->Response(meta);
      return;
    }
    if (g.w.empty())
      die("server: a request for key " + std::to_string(req.keys[0]) + " before its initial push");
    if (meta.push) {
      if (req.vals.size() != g.w.size())
        die("server: a push of " + std::to_string(req.vals.size()) + " values for key "
            + std::to_string(req.keys[0]) + ", which holds " + std::to_string(g.w.size()));
      const float* v = req.vals.data();
      float* s = g.sum.data();
      const size_t n = g.sum.size();
      if (g.pushes == 0)
        std::copy(v, v + n, s);
      else
        for (size_t i = 0; i < n; ++i)
          s[i] += v[i];
      g.held.push_back(meta);
      if (++g.pushes < workers_)
        return;
      float* w = g.w.data();
      for (size_t i = 0; i < n; ++i)
        w[i] += s[i];
      for (const auto& m : g.held)
        srv->Response(m, m.pull ? weights(g) : ps::KVPairs<float>());
      g.held.clear();
      g.pushes = 0;
      return;
    }
    srv->Response(meta, weights(g));
  }

  static ps::KVPairs<float> weights(const group_state& g) {
    ps::KVPairs<float> res;
    res.keys = g.keys;
    res.vals.CopyFrom(g.w.data(), g.w.size());  // a copy: w changes with the next step
    res.lens = g.lens;
    return res;
  }

  ps::KVServer<float> server_;
  const int workers_;
  std::unordered_map<ps::Key, group_state> groups_;
};

// ------------------------------------------------------------------------------------ worker
struct answers {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<size_t> pushed;  // pull mode: groups whose push was answered, pull not yet sent
  std::vector<char> in;       // per group: its weights of the last step pushed are back
  std::vector<clock_type::time_point> back_at;  // per group: since when (in[g] set)
};

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

void run_worker(const std::vector<group_plan>& plan, double compute_ms, int warmup, int timed,
                double step_timeout_s, bool pushpull) {
  const int rank = ps::MyRank(), workers = ps::NumWorkers(), servers = ps::NumServers();
  const auto& ranges = ps::Postoffice::Get()->GetServerKeyRanges();
  const size_t groups = plan.size();
  std::vector<ps::SArray<ps::Key>> keys(groups);
  std::vector<ps::SArray<int>> lens(groups), pulled_lens(groups);
  std::vector<ps::SArray<float>> grads(groups), weights(groups);
  ps::Key next_key = 0;  // keys ascend within a group, as ps-lite's slicer needs
  size_t elements = 0;
  for (size_t g = 0; g < groups; ++g) {
    if (plan[g].server >= servers)
      die("group " + std::to_string(g) + " is on server " + std::to_string(plan[g].server)
          + ", but there are " + std::to_string(servers));
    for (size_t k = 0; k < plan[g].lens.size(); ++k)
      keys[g].push_back(ranges[plan[g].server].begin() + next_key++);
    lens[g].CopyFrom(plan[g].lens.data(), plan[g].lens.size());
    pulled_lens[g].resize(plan[g].lens.size());
    grads[g].resize(plan[g].elements, static_cast<float>(rank + 1));
    weights[g].resize(plan[g].elements, 0.f);
    elements += plan[g].elements;
  }
  ps::KVWorker<float> kv(0, 0);
  // KVWorker::Wait has no deadline: every wait here is on a callback, with one.
  answers a;
  if (rank == 0) {
    size_t done = 0;
    std::vector<ps::SArray<float>> zeros(groups);  // ZPush does not copy: kept until answered
    for (size_t g = 0; g < groups; ++g) {
      zeros[g].resize(plan[g].elements, 0.f);
      kv.ZPush(keys[g], zeros[g], lens[g], kInit, [&a, &done] {
        std::lock_guard<std::mutex> lock(a.mu);
        ++done;
        a.cv.notify_all();
      });
    }
    std::unique_lock<std::mutex> lock(a.mu);
    if (!a.cv.wait_for(lock, std::chrono::duration<double>(step_timeout_s), [&] { return done == groups; }))
      die("the initial weights were not all answered within " + std::to_string(step_timeout_s) + " s");
  }
  ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup);

  const double expected_per_step = workers * (workers + 1) / 2.0;
  // The weights of `group` after `steps` steps: every value must be the pushes' sum so far.
  auto check = [&](size_t g, int steps) {
    const float want = static_cast<float>(expected_per_step * steps);
    const auto& w = weights[g];
    const bool whole = g == static_cast<size_t>(steps) % groups || steps == warmup + timed;
    const size_t n = whole ? w.size() : 2;
    for (size_t j = 0; j < n; ++j) {
      const size_t i = whole ? j : (j == 0 ? 0 : w.size() - 1);
      if (w[i] != want)
        die("after step " + std::to_string(steps) + ": group " + std::to_string(g) + " value " + std::to_string(i)
            + " is " + std::to_string(w[i]) + ", expected " + std::to_string(want)
            + " (the sum of every worker's pushes so far)");
    }
    for (size_t k = 0; k < lens[g].size(); ++k)
      if (pulled_lens[g][k] != lens[g][k])
        die("after step " + std::to_string(steps) + ": group " + std::to_string(g)
            + " came back with key lengths other than pushed");
  };
  auto issue_pull = [&](size_t g) {
    kv.ZPull(keys[g], &weights[g], &pulled_lens[g], 0, [&a, g] {
      std::lock_guard<std::mutex> lock(a.mu);
      a.in[g] = 1;
      a.back_at[g] = clock_type::now();
      a.cv.notify_all();
    });
  };
  // Sends the pulls of answered pushes until `ready()` (read under the lock) holds, or `until`
  // has come, whichever is first; true when ready. Past `deadline` the worker dies: no wait is
  // without an end. ps-lite's calls lock its own mutex: never call them holding ours.
  auto serve_until = [&](clock_type::time_point until, clock_type::time_point deadline, int step,
                         const std::function<bool()>& ready) {
    for (;;) {
      std::vector<size_t> to_pull;
      bool done;
      {
        std::unique_lock<std::mutex> lock(a.mu);
        a.cv.wait_until(lock, std::min(until, deadline), [&] { return ready() || !a.pushed.empty(); });
        done = ready();
        to_pull.assign(a.pushed.begin(), a.pushed.end());
        a.pushed.clear();
      }
      for (size_t g : to_pull)
        issue_pull(g);
      if (done)
        return true;
      const auto now = clock_type::now();
      if (now >= deadline)
        die("step " + std::to_string(step) + " did not end within " + std::to_string(step_timeout_s) + " s");
      if (now >= until)
        return false;
    }
  };
  auto after_ms = [](clock_type::time_point t, double ms) {
    return t + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double, std::milli>(ms));
  };
  const auto never = [] { return false; };
  a.in.assign(groups, 1);  // the initial weights: step 0's forward waits for nothing
  a.back_at.assign(groups, clock_type::time_point::min());
  std::vector<double> times;
  auto step_start = clock_type::now();
  // The device's time, as Troupe's stand-in keeps it (compute_actor.hpp, "Stand-in"): when its
  // last segment (or the last step's backward) ended. A segment starts once that one has ended
  // and its weights are back, whenever this thread got to it, so late wake-ups do not add up.
  auto mark = step_start;
  for (int step = 0; step < warmup + timed; ++step) {
    const auto deadline = after_ms(clock_type::now(), step_timeout_s * 1e3);
    for (size_t k = 0; k < groups; ++k) {  // forward, first layers first
      const size_t g = groups - 1 - k;
      serve_until(deadline, deadline, step, [&] { return a.in[g] != 0; });
      clock_type::time_point back;
      {
        std::lock_guard<std::mutex> lock(a.mu);
        back = a.back_at[g];
      }
      if (step > 0)
        check(g, step);
      mark = after_ms(std::max(mark, back), compute_ms / 3 * plan[g].work);
      serve_until(mark, deadline, step, never);
    }
    const auto backward_start = mark;
    double backward_done = 0;  // the shares of groups 0..g
    for (size_t g = 0; g < groups; ++g) {  // backward, last layers first
      backward_done = g + 1 == groups ? 1.0 : std::min(1.0, backward_done + plan[g].work);
      serve_until(after_ms(backward_start, (compute_ms - compute_ms / 3) * backward_done), deadline, step, never);
      {
        std::lock_guard<std::mutex> lock(a.mu);
        a.in[g] = 0;
      }
      if (pushpull) {
        // ZPushPull sends the lens it is given to fill: they must be the request's own
        pulled_lens[g].CopyFrom(lens[g]);
        kv.ZPushPull(keys[g], grads[g], &weights[g], &pulled_lens[g], 0, [&a, g] {
          std::lock_guard<std::mutex> lock(a.mu);
          a.in[g] = 1;
          a.back_at[g] = clock_type::now();
          a.cv.notify_all();
        });
        continue;
      }
      kv.ZPush(keys[g], grads[g], lens[g], 0, [&a, g] {
        std::lock_guard<std::mutex> lock(a.mu);
        a.pushed.push_back(g);
        a.cv.notify_all();
      });
    }
    mark = after_ms(backward_start, compute_ms - compute_ms / 3);  // backward's end on the device
    const auto now = clock_type::now();
    const double ms = ms_between(step_start, now);
    step_start = now;
    std::fprintf(stderr, "# worker=%d step=%d ms=%.1f\n", rank, step, ms);
    if (step >= warmup)
      times.push_back(ms);
  }
  // The last step's answers: every group's weights back and whole.
  const auto deadline = after_ms(clock_type::now(), step_timeout_s * 1e3);
  for (size_t g = 0; g < groups; ++g) {
    serve_until(deadline, deadline, warmup + timed, [&] { return a.in[g] != 0; });
    check(g, warmup + timed);
  }
  std::vector<double> s = times;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  const double median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  std::printf("pslite_model_step mode=%s workers=%d servers=%d groups=%zu elements=%zu compute_ms=%g "
              "step_ms_median=%.1f min=%.1f max=%.1f worker=%d\n", pushpull ? "pushpull" : "pull",
              workers, servers, groups, elements, compute_ms, median, s.front(), s.back(), rank);
  std::fflush(stdout);
}

double number(const char* text, const char* what, double low) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= low))
    die(std::string(what) + " '" + text + "': expected a number >= " + std::to_string(low));
  return v;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc < 5 || argc > 7) {
    std::fprintf(stderr, "usage: %s PLAN COMPUTE_MS WARMUP TIMED [STEP_TIMEOUT_S=300] [MODE=pull|pushpull]\n",
                 argv[0]);
    return 2;
  }
  const auto plan = read_plan(argv[1]);
  const double compute_ms = number(argv[2], "COMPUTE_MS", 0);
  const int warmup = static_cast<int>(number(argv[3], "WARMUP", 0));
  const int timed = static_cast<int>(number(argv[4], "TIMED", 1));
  const double step_timeout_s = argc > 5 ? number(argv[5], "STEP_TIMEOUT_S", 1) : 300;
  const std::string mode = argc > 6 ? argv[6] : "pull";
  if (mode != "pull" && mode != "pushpull")
    die("MODE '" + mode + "': expected pull or pushpull");
  ps::Start(0, argv[0]);
  sync_server* server = ps::IsServer() ? new sync_server() : nullptr;
  if (ps::IsWorker())
    run_worker(plan, compute_ms, warmup, timed, step_timeout_s, mode == "pushpull");
  ps::Finalize(0, true);  // a barrier of every node: servers and the scheduler wait for the workers
  delete server;
  return 0;
}
