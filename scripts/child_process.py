"""Child processes of the scripts and tests that run Troupe nodes (tests/apps/cluster_run.py,
scripts/chaos.py, scripts/emulated_hosts.py): the one way they start, wait for and end them.

Each child runs in a session of its own, so its process group holds it and whatever it starts
(`troupe launch`'s nodes, `ip netns exec`'s command); its output goes to files (a node's log
is read back from there, and kept when a test fails); every wait has a deadline; and a
Children set kills every group it started when it is closed, also on an exception or Ctrl-C,
so that nothing is left behind.

    with Children(workdir) as children:
        children.start("scheduler", ["troupe", "node", ...])      # scheduler.out, scheduler.err
        code = children.wait("scheduler", timeout=120)           # or subprocess.TimeoutExpired
"""
import os
import signal
import subprocess
import time


def kill_group(pid):
    """SIGKILLs process group `pid` (a child started here leads its own); gone already is fine."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def alive(pid):
    """Whether `pid` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def descendants(pid):
    """Every process whose ancestry leads to pid (from /proc)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def start(argv, out=None, err=None, **popen_args):
    """Starts argv in a session of its own; `out` and `err` are file paths (err may be
    subprocess.STDOUT: both streams in `out`), None: inherited. Returns the Popen."""
    files = []
    try:
        if out is not None:
            files.append(open(out, "w"))
            popen_args["stdout"] = files[-1]
        if err is subprocess.STDOUT:
            popen_args["stderr"] = subprocess.STDOUT
        elif err is not None:
            files.append(open(err, "w"))
            popen_args["stderr"] = files[-1]
        return subprocess.Popen(argv, start_new_session=True, **popen_args)
    finally:
        for f in files:  # the child holds its own copies
            f.close()


def end(proc, timeout=10):
    """Kills `proc`'s group (continuing it, in case it was stopped) and reaps it; False if it
    still runs after `timeout` seconds."""
    kill_group(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGCONT)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


class Children:
    """The children of one run, by name: started in `workdir` with their output in
    `workdir/<name>.out` and `.err`; closed (kill_all), every group is killed."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.procs = {}  # name -> Popen, in start order

    def __enter__(self):
        return self

    def __exit__(self, kind, value, trace):
        self.kill_all()
        return False

    def output(self, name, stream):
        """The path of child `name`'s stream ("out" or "err")."""
        return os.path.join(self.workdir, f"{name}.{stream}")

    def start(self, name, argv, env=None, merged=False, cwd=None):
        """Starts child `name` (its streams in its .out and .err, or both in .out when `merged`)."""
        self.procs[name] = start(argv, out=self.output(name, "out"),
                                 err=subprocess.STDOUT if merged else self.output(name, "err"),
                                 env=env, cwd=cwd or self.workdir)
        return self.procs[name]

    def text(self, name, stream):
        try:
            with open(self.output(name, stream), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def wait(self, name, timeout):
        """Child `name`'s exit status, within `timeout` seconds (else subprocess.TimeoutExpired)."""
        return self.procs[name].wait(timeout)

    def wait_all(self, timeout):
        """Every child's exit status by name, or None for those still running after `timeout`
        seconds (counted once for all)."""
        deadline = time.time() + timeout
        codes = {}
        for name, proc in self.procs.items():
            try:
                codes[name] = proc.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                codes[name] = None
        return codes

    def kill_all(self):
        """Kills every child's group; returns "name (pid P)" for each that survives SIGKILL."""
        for proc in self.procs.values():
            kill_group(proc.pid)
        return [f"{name} (pid {proc.pid})" for name, proc in self.procs.items() if not end(proc)]
