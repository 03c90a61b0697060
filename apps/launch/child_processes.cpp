// The supervisor's loop is one poll over a self-pipe, which the signal handlers write the
// signal's number to, and the children's pipes; each step then reaps whoever exited and sends
// whatever signal a deadline calls for. Pipes are non-blocking, so a step never waits on one
// child while another has output.
#include "apps/launch/child_processes.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include <troupe/cluster/node_fences.hpp>

extern char** environ;

namespace troupe::launch {

std::string record_name(const std::string& label) {
  auto name = label;
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

namespace {

// The signals the supervisor takes over while it lives, and what was there before.
constexpr int handled_signals[] = {SIGCHLD, SIGINT, SIGTERM, SIGPIPE};
struct sigaction saved_actions[std::size(handled_signals)];

// The self-pipe's write end; -1 while no supervisor lives.
int signal_write_fd = -1;

void on_signal(int signal) {
  int saved = errno;
  auto byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] auto n = ::write(signal_write_fd, &byte, 1);
  errno = saved;
}

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), "launch: " + what);
}

void close_fd(int& fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

// argv and envp as exec wants them, built before fork so the child only calls exec.
struct exec_args {
  std::vector<std::string> env;
  std::vector<char*> argv, envp;
  std::string failure; // what the child prints if exec fails

  explicit exec_args(const child_spec& spec) {
    auto key = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry = *e;
      bool replaced = std::any_of(spec.env.begin(), spec.env.end(),
                                  [&](const std::string& x) { return key(x) == key(entry); });
      if (!replaced)
        env.push_back(entry);
    }
    env.insert(env.end(), spec.env.begin(), spec.env.end());
    for (const auto& a : spec.argv)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (auto& e : env)
      envp.push_back(e.data());
    envp.push_back(nullptr);
    failure = "launch: cannot run " + spec.argv[0] + ": ";
  }
};

struct child_pipes {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};

  child_pipes() {
    // Close-on-exec: no child may inherit another child's pipe ends.
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0
        || ::pipe2(err, O_CLOEXEC) != 0) {
      close_all();
      fail("cannot create pipes");
    }
  }
  void close_all() {
    for (int* p : {in, out, err}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
  }
};

// Makes `fd` the child's descriptor `target`, open across exec.
bool move_fd(int fd, int target) {
  if (fd == target) // possible when the launcher started with a standard descriptor closed
    return ::fcntl(fd, F_SETFD, 0) == 0;
  return ::dup2(fd, target) == target;
}

// In the child, between fork and exec. Signals are blocked on entry (see start).
[[noreturn]] void run_child(child_pipes& p, const exec_args& a, pid_t parent) {
  for (int s : handled_signals)
    ::signal(s, SIG_DFL); // an ignored SIGPIPE would survive exec
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::setpgid(0, 0); // its own group: one kill reaches everything it starts
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent)
    ::_exit(127); // the launcher died before the death signal was armed
  if (!move_fd(p.in[0], STDIN_FILENO) || !move_fd(p.out[1], STDOUT_FILENO)
      || !move_fd(p.err[1], STDERR_FILENO))
    ::_exit(127);
  ::execvpe(a.argv[0], a.argv.data(), a.envp.data());
  const char* why = std::strerror(errno);
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, a.failure.data(), a.failure.size());
  n = ::write(STDERR_FILENO, why, std::strlen(why));
  n = ::write(STDERR_FILENO, "\n", 1);
  ::_exit(127);
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Signals a running child's process group; the child alone should the group not exist (it
// could not be made), so that no child outlives the supervisor either way.
void kill_group(pid_t pid, int signal) {
  if (::kill(-pid, signal) != 0)
    ::kill(pid, signal);
}

bool failed(int status) {
  return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

} // namespace

child_processes::child_processes(supervisor_options options) : options_(options) {
  if (signal_write_fd >= 0)
    throw std::logic_error("launch: only one child_processes may live at a time");
  if (::pipe2(signal_pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
    fail("cannot create the signal pipe");
  signal_write_fd = signal_pipe_[1];
  for (std::size_t i = 0; i < std::size(handled_signals); ++i) {
    struct sigaction action {};
    action.sa_handler = handled_signals[i] == SIGPIPE ? SIG_IGN : on_signal;
    action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&action.sa_mask);
    ::sigaction(handled_signals[i], &action, &saved_actions[i]);
  }
}

child_processes::~child_processes() {
  for (auto& c : children_) {
    if (!c.exited) {
      kill_group(c.pid, SIGKILL);
      int status = 0;
      while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    close_fd(c.input_fd);
    close_fd(c.out.fd);
    close_fd(c.err.fd);
  }
  for (std::size_t i = 0; i < std::size(handled_signals); ++i)
    ::sigaction(handled_signals[i], &saved_actions[i], nullptr);
  signal_write_fd = -1;
  close_fd(signal_pipe_[0]);
  close_fd(signal_pipe_[1]);
}

pid_t child_processes::start(const child_spec& spec) {
  if (spec.argv.empty())
    throw std::invalid_argument("launch: " + spec.name + " has no program to run");
  exec_args args(spec);
  child_pipes p;
  // Blocked across fork: a signal must not run our handler in the child before exec.
  sigset_t all, previous;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &previous);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0)
    run_child(p, args, parent);
  int fork_errno = errno;
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) {
    p.close_all();
    errno = fork_errno;
    fail("cannot start " + spec.name);
  }
  ::setpgid(pid, pid); // the child does the same; whichever runs first wins the race
  close_fd(p.in[0]);
  close_fd(p.out[1]);
  close_fd(p.err[1]);
  for (int fd : {p.in[1], p.out[0], p.err[0]})
    set_nonblocking(fd);
  child c;
  c.name = spec.name;
  c.expendable = spec.expendable;
  c.spec = spec;
  c.pid = pid;
  c.input_fd = p.in[1];
  c.input = spec.input;
  c.out.fd = p.out[0];
  c.err.fd = p.err[0];
  children_.push_back(std::move(c));
  write_input(children_.back());
  record_event(options_.events, "spawned",
               {{{"child_pid", pid}}, {{"name", record_name(spec.name)}}});
  return pid;
}

void child_processes::write_input(child& c) {
  while (c.input_fd >= 0 && !c.input.empty()) {
    ssize_t n = ::write(c.input_fd, c.input.data(), c.input.size());
    if (n > 0)
      c.input.erase(0, static_cast<std::size_t>(n));
    else if (errno == EAGAIN)
      return;
    else if (errno != EINTR)
      break; // it closed its stdin or died: the rest has no reader
  }
  close_fd(c.input_fd);
  c.input.clear();
}

void child_processes::relay(output_stream& s, const std::string& name, std::ostream& sink) {
  char buffer[65536];
  // Bounded, so a child that writes without pause cannot starve the others.
  for (int reads = 0; s.fd >= 0 && reads < 16; ++reads) {
    ssize_t n = ::read(s.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return; // EAGAIN: nothing more for now
    if (n == 0) {
      close_output(s, name, sink);
      return;
    }
    s.pending.append(buffer, static_cast<std::size_t>(n));
    std::size_t begin = 0;
    for (std::size_t end; (end = s.pending.find('\n', begin)) != std::string::npos; begin = end + 1)
      sink << '[' << name << "] " << std::string_view(s.pending).substr(begin, end + 1 - begin);
    s.pending.erase(0, begin);
    sink.flush();
  }
}

void child_processes::close_output(output_stream& s, const std::string& name, std::ostream& sink) {
  if (!s.pending.empty())
    sink << '[' << name << "] " << s.pending << '\n' << std::flush;
  s.pending.clear();
  close_fd(s.fd);
}

std::chrono::milliseconds child_processes::until_next_deadline() const {
  auto next = clock::now() + std::chrono::seconds(1);
  for (const auto& at : {term_at_, kill_at_})
    if (at)
      next = std::min(next, *at);
  auto left = std::chrono::ceil<std::chrono::milliseconds>(next - clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

void child_processes::step(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds{{signal_pipe_[0], POLLIN, 0}};
  for (const auto& c : children_) {
    if (c.input_fd >= 0)
      fds.push_back({c.input_fd, POLLOUT, 0});
    for (int fd : {c.out.fd, c.err.fd})
      if (fd >= 0)
        fds.push_back({fd, POLLIN, 0});
  }
  if (::poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) < 0 && errno != EINTR)
    fail("poll failed");
  read_signals();
  // Non-blocking: trying every pipe costs less than mapping poll's answer back to children.
  for (auto& c : children_) {
    write_input(c);
    relay(c.out, c.name, *options_.out);
    relay(c.err, c.name, *options_.err);
  }
  reap();
  enforce_deadlines();
}

void child_processes::read_signals() {
  unsigned char signals[64];
  ssize_t n;
  while ((n = ::read(signal_pipe_[0], signals, sizeof signals)) > 0)
    for (ssize_t i = 0; i < n; ++i)
      if (signals[i] == SIGINT || signals[i] == SIGTERM)
        request_stop(signals[i]);
  // SIGCHLD needs nothing here: it only woke the poll, and every step reaps.
}

void child_processes::reap() {
  for (auto& c : children_) {
    if (c.exited)
      continue;
    int status = 0;
    pid_t r = ::waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid)
      on_exit(c, status);
  }
  // Started only now: on_exit ran on a reference into children_, which a start may move.
  auto due = std::move(due_restarts_);
  due_restarts_.clear();
  for (const auto& [spec, restarted] : due) {
    start(spec);
    children_.back().restarted = restarted;
  }
  end_restarted_without_peers();
}

// A child started again (a scheduler, --resume) takes over from the others. Once every other
// child has exited and one of them failed (killed with it, as a lost host's processes are),
// there is no one to take over from, and waiting for them would last its join timeout: it is
// ended and the launch fails, so that --max-restarts may start the job again. (Others that all
// finished are the run ending under the restarted child, which then ends by itself.)
void child_processes::end_restarted_without_peers() {
  if (term_sent_ || term_at_)
    return;
  for (auto& c : children_) {
    if (c.exited || c.restarted == 0)
      continue;
    bool others_gone = true, others_failed = false;
    for (const auto& o : children_) {
      if (&o == &c || (o.name == c.name && o.exited))
        continue; // itself, and the earlier runs of its name
      others_gone = others_gone && o.exited;
      others_failed = others_failed || (o.exited && o.status != 0);
    }
    if (!others_gone || !others_failed)
      continue;
    *options_.err << "launch: every other process is gone; the restarted " << c.name
                  << " has no one to take over from" << std::endl;
    if (!failure_status_)
      failure_status_ = 1;
    schedule_terminate(clock::now());
  }
}

void child_processes::on_exit(child& c, int status) {
  c.exited = true;
  c.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // Whatever it started goes with it (the pgid stays reserved while any member lives; the
  // pid alone is not signalled: reaped, it may already be someone else's).
  ::kill(-c.pid, SIGKILL);
  // All it wrote before exiting is in the pipes now; a grandchild's later output is not waited for.
  relay(c.out, c.name, *options_.out);
  relay(c.err, c.name, *options_.err);
  close_output(c.out, c.name, *options_.out);
  close_output(c.err, c.name, *options_.err);
  close_fd(c.input_fd);
  record_event(options_.events, "exited",
               {{{"child_pid", c.pid},
                 {"code", WIFEXITED(status) ? WEXITSTATUS(status) : -1},
                 {"signal", WIFSIGNALED(status) ? WTERMSIG(status) : 0}},
                {{"name", record_name(c.name)}}});
  if (!failed(status))
    return;
  if (stop_signal_ != 0 && WIFEXITED(status) && WEXITSTATUS(status) == 128 + stop_signal_)
    return; // it stopped as asked (a node interrupted says where itself)
  auto& log = *options_.err;
  log << "launch: " << c.name << " (pid " << c.pid << ") ";
  if (WIFEXITED(status))
    log << "exited with status " << WEXITSTATUS(status) << std::endl;
  else
    log << "killed by signal " << WTERMSIG(status) << std::endl;
  // Killed by a signal (SIGKILL, the OOM killer): a lost node the scheduler may replace (a
  // worker adopted, a server's backups promoted). One that exits with a status of its own (a
  // bad flag, a refusal) still ends the launch: the scheduler would otherwise wait for it
  // until its join timeout.
  // A child that has a way back (a scheduler: --resume) is started again, its output under
  // the same name.
  if (!c.spec.restart_argv.empty() && c.spec.restarts > 0 && WIFSIGNALED(status) && !term_sent_
      && !term_at_ && stop_signal_ == 0) {
    auto again = c.spec;
    again.argv = c.spec.restart_argv;
    again.restarts = c.spec.restarts - 1;
    log << "launch: starting " << c.name << " again (restart " << c.restarted + 1 << " of "
        << c.restarted + c.spec.restarts << ")" << std::endl;
    record_event(options_.events, "restart",
                 {{{"signal", WTERMSIG(status)},
                   {"count", c.restarted + 1},
                   {"of", c.restarted + c.spec.restarts}},
                  {{"name", record_name(c.name)}}});
    due_restarts_.push_back({std::move(again), c.restarted + 1});
    return;
  }
  // Fenced (troupe node's exit status 3): the scheduler had declared it lost (frozen, cut off)
  // and its part runs elsewhere, as after a SIGKILL.
  const bool fenced = WIFEXITED(status) && WEXITSTATUS(status) == fenced_exit_status;
  if (c.expendable && (WIFSIGNALED(status) || fenced) && !term_sent_ && !term_at_) {
    if (fenced)
      log << "launch: " << c.name
          << " was fenced: the scheduler had declared it lost, and its part runs elsewhere"
          << std::endl;
    log << "launch: the run goes on if the scheduler can do without " << c.name
        << " (on_worker_loss, shard_backups)" << std::endl;
    return;
  }
  if (!failure_status_)
    failure_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  schedule_terminate(clock::now() + options_.grace);
}

void child_processes::schedule_terminate(clock::time_point at) {
  if (!term_sent_ && (!term_at_ || at < *term_at_))
    term_at_ = at;
}

void child_processes::enforce_deadlines() {
  auto now = clock::now();
  if (term_at_ && now >= *term_at_) {
    signal_all(SIGTERM);
    term_sent_ = true;
    term_at_.reset();
    auto at = now + options_.kill_delay;
    if (!kill_at_ || at < *kill_at_)
      kill_at_ = at;
  }
  if (kill_at_ && now >= *kill_at_) {
    signal_all(SIGKILL);
    kill_at_.reset();
  }
}

void child_processes::signal_all(int signal) {
  for (const auto& c : children_)
    if (!c.exited)
      kill_group(c.pid, signal);
}

void child_processes::request_stop(int signal) {
  if (stop_signal_ != 0) {
    kill_at_ = clock::now();
  } else if (signal == SIGINT) {
    // Ctrl-C is passed on, so each child stops as it would at a terminal (saying where it
    // was); SIGTERM follows only for those still running after the grace. Last started
    // first: the first child (a scheduler) is the one whose end the others would notice.
    stop_signal_ = signal;
    for (auto c = children_.rbegin(); c != children_.rend(); ++c)
      if (!c->exited)
        kill_group(c->pid, SIGINT);
    schedule_terminate(clock::now() + options_.grace);
    return;
  } else {
    stop_signal_ = signal;
  }
  schedule_terminate(clock::now());
  enforce_deadlines();
}

void child_processes::terminate() {
  schedule_terminate(clock::now());
  enforce_deadlines();
}

wait_result child_processes::wait_until(const std::function<bool()>& ready,
                                        std::chrono::milliseconds limit) {
  auto end = clock::now() + limit;
  while (true) {
    if (ready())
      return wait_result::ready;
    if (stop_signal_ != 0)
      return wait_result::stopped;
    if (any_exited())
      return wait_result::child_exited;
    auto now = clock::now();
    if (now >= end)
      return wait_result::timed_out;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(end - now);
    step(std::min({left, until_next_deadline(), std::chrono::milliseconds(20)}));
  }
}

int child_processes::wait() {
  while (!all_exited())
    step(until_next_deadline());
  if (stop_signal_ != 0)
    return 128 + stop_signal_;
  return failure_status_.value_or(0);
}

void child_processes::set_restart(pid_t pid, std::vector<std::string> argv, int restarts) {
  for (auto& c : children_)
    if (c.pid == pid) {
      c.spec.restart_argv = std::move(argv);
      c.spec.restarts = restarts;
    }
}

std::vector<pid_t> child_processes::pids() const {
  std::vector<pid_t> result;
  for (const auto& c : children_)
    result.push_back(c.pid);
  return result;
}

bool child_processes::all_exited() const {
  return std::all_of(children_.begin(), children_.end(), [](const child& c) { return c.exited; });
}

bool child_processes::any_exited() const {
  return std::any_of(children_.begin(), children_.end(), [](const child& c) { return c.exited; });
}

} // namespace troupe::launch
