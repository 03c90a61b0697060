// model_step.cc: one training step's parameter traffic of a real model, moved by ps-lite
// (dmlc/ps-lite's KVWorker/KVServer over its ZMQ van) the way Troupe's compute stand-in moves
// it, so scripts/bench_pslite.py can time both on the same emulated hosts. Built outside the
// project by scripts/pslite/build.sh; ps-lite is not a dependency of Troupe.
//
//   model_step PLAN COMPUTE_MS WARMUP TIMED [STEP_TIMEOUT_S=300] [MODE=pull]
//
// One binary for every role; ps-lite's DMLC_ROLE (and the other DMLC_* variables) pick it.
// PLAN (written by bench_pslite.py from `troupe check --push-groups`): one line per request a
// worker sends per step, in the order backward completes them: `group SERVER LEN...`, the
// ps-lite server rank that owns it and the elements (float32) of each key it carries. Lines
// starting with '#' are comments.
//
// Server, as MXNet's dist_sync server (kvstore_dist_server.h): per request group it sums the
// pushes of all W workers, holding each push unanswered; the W-th push applies the sum
// (w += sum) and answers every held push. A pull is answered at once with a fresh copy of w.
// Worker rank 0 first sends every group's initial weights (zeros, command kInit); all workers
// then meet at a ps-lite barrier, once. A worker's step, as Troupe's stand-in
// (actors/include/troupe/actors/compute_actor.hpp, "Stand-in"): forward is the first third of
// COMPUTE_MS; group g (of G) is pushed at COMPUTE_MS/3 + (2/3 COMPUTE_MS)(g+1)/G from the
// step's start; its pull is sent when its push is answered (MXNet's engine order: the pull
// depends on the push); the step ends when every pull has come back, and the next starts.
// MODE pushpull instead sends each group as one ZPushPull (push and pull in one request, the
// server answering it with the weights once the W-th push applied the sum), as Troupe's push is
// answered with the weights: no pull request waits behind pushes on the worker's connection.
// Check: worker r pushes the value r+1 everywhere, so after step s (1-based) every pulled
// weight is s * W(W+1)/2 exactly; the first and last value of every group and all of one
// group (in turn) are checked every step, and a wrong value ends the worker with an error.
//
// Output (worker, stdout), one line: `pslite_model_step mode=MODE workers=W servers=S groups=G
// elements=N compute_ms=C step_ms_median=X min=Y max=Z worker=R` over the TIMED steps after
// WARMUP; each step's time goes to stderr. Every wait is bounded by STEP_TIMEOUT_S: a step
// that takes longer ends the worker with an error (exit 1), never a hang.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
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
    words >> tag >> g.server;
    long len = 0;
    while (words >> len) {
      if (len <= 0 || len > (1L << 30))
        die(path + ":" + std::to_string(number) + ": a key of " + std::to_string(len) + " elements");
      g.lens.push_back(static_cast<int>(len));
      g.elements += static_cast<size_t>(len);
    }
    if (tag != "group" || !words.eof() || g.lens.empty() || g.server < 0)
      die(path + ":" + std::to_string(number) + ": expected `group SERVER LEN...`, got '" + line + "'");
    plan.push_back(g);
  }
  if (plan.empty())
    die("the plan '" + path + "' lists no group");
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
  std::deque<size_t> pushed;  // groups whose push was answered, pull not yet sent
  size_t pulled = 0;          // groups whose pull came back this step
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
  std::vector<double> times;
  for (int step = 0; step < warmup + timed; ++step) {
    const auto t0 = clock_type::now();
    const auto deadline = t0 + std::chrono::duration_cast<clock_type::duration>(
                                   std::chrono::duration<double>(step_timeout_s));
    std::vector<clock_type::time_point> push_at(groups);
    for (size_t g = 0; g < groups; ++g)
      push_at[g] = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double, std::milli>(
                            compute_ms / 3 + (compute_ms - compute_ms / 3) * double(g + 1) / double(groups)));
    size_t next_push = 0;
    {
      std::lock_guard<std::mutex> lock(a.mu);
      a.pulled = 0;
      a.pushed.clear();
    }
    for (;;) {
      std::vector<size_t> to_pull;
      {
        std::unique_lock<std::mutex> lock(a.mu);
        const auto until = next_push < groups ? std::min(push_at[next_push], deadline) : deadline;
        a.cv.wait_until(lock, until, [&] {
          return !a.pushed.empty() || a.pulled == groups
                 || (next_push < groups && clock_type::now() >= push_at[next_push]);
        });
        if (a.pulled == groups)
          break;
        to_pull.assign(a.pushed.begin(), a.pushed.end());
        a.pushed.clear();
      }
      if (clock_type::now() > deadline)
        die("step " + std::to_string(step) + " did not end within " + std::to_string(step_timeout_s) + " s");
      // ps-lite's calls lock its own mutex: never call them holding ours
      for (size_t g : to_pull)
        kv.ZPull(keys[g], &weights[g], &pulled_lens[g], 0, [&a] {
          std::lock_guard<std::mutex> lock(a.mu);
          ++a.pulled;
          a.cv.notify_all();
        });
      const auto now = clock_type::now();
      for (; next_push < groups && now >= push_at[next_push]; ++next_push) {
        const size_t g = next_push;
        if (pushpull) {
          // ZPushPull sends the lens it is given to fill: they must be the request's own
          pulled_lens[g].CopyFrom(lens[g]);
          kv.ZPushPull(keys[g], grads[g], &weights[g], &pulled_lens[g], 0, [&a] {
            std::lock_guard<std::mutex> lock(a.mu);
            ++a.pulled;
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
    }
    const double ms = ms_between(t0, clock_type::now());
    std::fprintf(stderr, "# worker=%d step=%d ms=%.1f\n", rank, step, ms);
    if (step >= warmup)
      times.push_back(ms);
    const float want = static_cast<float>(expected_per_step * (step + 1));
    const size_t whole = static_cast<size_t>(step) % groups;
    for (size_t g = 0; g < groups; ++g) {
      const auto& w = weights[g];
      const size_t n = g == whole ? w.size() : 2;
      for (size_t j = 0; j < n; ++j) {
        const size_t i = g == whole ? j : (j == 0 ? 0 : w.size() - 1);
        if (w[i] != want)
          die("step " + std::to_string(step) + ": group " + std::to_string(g) + " value " + std::to_string(i)
              + " is " + std::to_string(w[i]) + ", expected " + std::to_string(want)
              + " (the sum of every worker's pushes so far)");
      }
      for (size_t k = 0; k < lens[g].size(); ++k)
        if (pulled_lens[g][k] != lens[g][k])
          die("step " + std::to_string(step) + ": group " + std::to_string(g) + " came back with key lengths "
              "other than pushed");
    }
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
