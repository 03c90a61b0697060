// A supervisor for the processes of one `troupe launch`: it starts them (fork + exec, each in
// its own process group, killed by the kernel if the launcher dies), relays their output line
// by line with a prefix per child, and takes all of them down when one fails or the launcher
// is told to stop. A failing child does not take the others down at once: the nodes notice a
// peer's death themselves, and the grace period lets them say why before they are terminated.
//
// Not thread-safe, and one per process: while it lives it owns the handlers of SIGCHLD, SIGINT
// and SIGTERM (and ignores SIGPIPE); it restores them when destroyed. Its destructor kills and
// reaps every child still running, so no path leaves a process behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <troupe/io/node_events.hpp>

namespace troupe::launch {

/// One process to start.
struct child_spec {
  /// "worker 1": its output lines start with "[worker 1] ", and log lines name it.
  std::string name;
  /// argv[0] is the program, looked up in PATH when it has no '/'.
  std::vector<std::string> argv;
  /// "KEY=VALUE" entries added to our environment (replacing ours of the same key).
  std::vector<std::string> env;
  /// Written to the child's standard input, which is then closed.
  std::string input;
  /// Its death by a signal alone does not end the others (a worker: whether the run goes on
  /// without it is the scheduler's call, which ends the run when it cannot, on_worker_loss);
  /// it is logged, and wait() does not count it. Nor does its exit fenced (fenced_exit_status,
  /// node_fences.hpp: the scheduler had declared it lost). Any other exit status still does.
  bool expendable = false;
  /// Killed by a signal (not by the launcher), it is started again with these arguments, at
  /// most `restarts` times over the launch (a scheduler: with --resume, which its servers and
  /// workers rejoin). Empty: never.
  std::vector<std::string> restart_argv;
  int restarts = 0;
};

struct supervisor_options {
  /// After the first failure, how long the others may run on before SIGTERM.
  std::chrono::milliseconds grace{15000};
  /// After SIGTERM, how long before SIGKILL.
  std::chrono::milliseconds kill_delay{5000};
  /// Where the children's standard output goes, prefixed.
  std::ostream* out = &std::cout;
  /// Where the children's standard error and the supervisor's own "launch: " lines go.
  std::ostream* err = &std::cerr;
  /// Records beside those lines: `spawned` (name, child_pid) as each child starts, `exited`
  /// (name, child_pid, code, signal) as each ends, `restart` (name, signal, count, of) when one
  /// is started again. A child's name in them is its label with '_' for ' ' ("worker_1"). Null:
  /// none.
  std::shared_ptr<node_events> events;
};

/// A child's name in records and record files: its label with '_' for ' ' ("worker 1" ->
/// "worker_1"), as the plan names nodes.
std::string record_name(const std::string& label);

/// Why wait_until returned.
enum class wait_result { ready, child_exited, stopped, timed_out };

class child_processes {
public:
  explicit child_processes(supervisor_options options = {});
  ~child_processes();
  child_processes(const child_processes&) = delete;
  child_processes& operator=(const child_processes&) = delete;

  /// Starts a child; throws std::system_error if it cannot. A program that cannot be executed
  /// is a child that says why on its stderr and exits with status 127.
  pid_t start(const child_spec& spec);

  /// Relays output until `ready()` holds, a child exits, a stop is requested or `limit`
  /// passes; checks every ~20 ms. The children keep running whatever it returns.
  wait_result wait_until(const std::function<bool()>& ready, std::chrono::milliseconds limit);

  /// Relays output and enforces the grace and kill deadlines until every child has exited.
  /// Returns 128 + the signal after a stop request; else 0 if every child exited 0 (expendable
  /// ones aside), else the first failing child's exit status (1 if a signal killed it).
  int wait();

  /// What the launcher does on SIGINT or SIGTERM (the handlers call it), and wait() then
  /// returns 128 + signal. SIGINT is passed on to every child's group (the last started
  /// first), SIGTERM follows after the grace for those still running; SIGTERM goes to every
  /// group at once. SIGKILL follows SIGTERM after kill_delay; a second request sends it at once.
  void request_stop(int signal);

  /// Ends the children for a reason of the launcher's own: SIGTERM now, SIGKILL after
  /// kill_delay. Does not change what wait() returns beyond the children's statuses.
  void terminate();

  /// From now on child `pid`, if killed by a signal, is started again with `argv`, at most
  /// `restarts` times (child_spec::restart_argv: known only once it runs, as a scheduler's port).
  void set_restart(pid_t pid, std::vector<std::string> argv, int restarts);

  /// The pids of every child started, in order.
  std::vector<pid_t> pids() const;

private:
  struct output_stream {
    int fd = -1;
    std::string pending; // bytes after the last newline relayed
  };
  struct child {
    std::string name;
    pid_t pid = -1;
    int input_fd = -1;
    std::string input; // not yet written
    output_stream out, err;
    bool exited = false;
    bool expendable = false;
    child_spec spec;   // as started (a restart starts from it)
    int restarted = 0; // times its name was started again before this one
    int status = -1;   // once exited: its exit status, or 128 + the signal that killed it
  };
  using clock = std::chrono::steady_clock;

  void step(std::chrono::milliseconds timeout);
  void read_signals();
  void write_input(child& c);
  void relay(output_stream& s, const std::string& name, std::ostream& sink);
  void close_output(output_stream& s, const std::string& name, std::ostream& sink);
  void reap();
  void end_restarted_without_peers();
  void on_exit(child& c, int status);
  void schedule_terminate(clock::time_point at);
  void enforce_deadlines();
  void signal_all(int signal);
  std::chrono::milliseconds until_next_deadline() const;
  bool all_exited() const;
  bool any_exited() const;

  supervisor_options options_;
  std::vector<child> children_;
  int signal_pipe_[2] = {-1, -1};
  std::optional<clock::time_point> term_at_; // when SIGTERM goes to every group
  std::optional<clock::time_point> kill_at_; // when SIGKILL goes to every group
  bool term_sent_ = false;
  int stop_signal_ = 0;
  std::optional<int> failure_status_;
  std::vector<std::pair<child_spec, int>>
    due_restarts_; // started after the reaping that found them killed
};

} // namespace troupe::launch
