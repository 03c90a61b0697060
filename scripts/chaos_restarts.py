"""Chaos trials of jobs that restart (scripts/chaos.py's variants with `restarts`): one
`troupe launch --max-restarts R --model-prefix <trial dir>/ckpt/m` saving every epoch, a node
lost (or every process of the job) at a moment found from the nodes' event records (`troupe
launch --events`), and the job expected to come back by itself: the launcher's `restart`
record, exit 0 and the uninterrupted in-process run's final weights digest, with no process left.
A node's records of each start of the job (a run) follow its `started` record (node_records.runs).

Besides chaos.py's moments, two belong to restarts:
  checkpoint  a part of epoch E's checkpoint on disk (its temporary file or the part), or the
              scheduler's `saving` record of epoch E, whichever is seen first: parts are
              being written and the manifest is not; the restart must resume from the newest whole checkpoint (E-1,
              or E when the manifest was written after all, or the start), never a torn one
  resume      a first SIGKILL of the victim once epoch E's checkpoint is saved, then the fault
              (the trial's way) on the restarted job's victim at the scheduler's `restoring`
              record of epoch E, while it restores; R = 2, so two restarts are expected
The way `all` kills every process of the job (SIGKILL) at the moment, as a lost host would.

Measured per trial: seconds from the fault to the launcher's restart record, and to the restarted
job's first `batch` record (training again: detection + restart + resume).
"""
import os
import re
import signal
import subprocess
import time

import child_process  # noqa: E402  (on sys.path through chaos.py)
import cluster_run  # noqa: E402
import node_records  # noqa: E402


def prefix_of(workdir):
    return os.path.join(workdir, "ckpt", "m")


def manifest(prefix, epoch):
    return f"{prefix}-{epoch:04d}.manifest.json"


def newest_manifest(prefix):
    folder, stem = os.path.split(prefix)
    found = [int(m.group(1)) for m in (re.fullmatch(re.escape(stem) + r"-(\d{4})\.manifest\.json", f)
                                       for f in (os.listdir(folder) if os.path.isdir(folder) else [])) if m]
    return max(found, default=0)


class RestartJob:
    """One `troupe launch --events` whose job may run several times: its records by node and run
    (its output, for people, in launch.out)."""

    def __init__(self, troupe, workdir, nodes):
        self.troupe, self.workdir, self.nodes, self.launch = troupe, workdir, nodes, None
        self.records = node_records.Folder(os.path.join(workdir, "events"))

    def start(self, command):
        self.launch = child_process.start(command[:2] + ["--events", self.records.folder] + command[2:],
                                          out=os.path.join(self.workdir, "launch.out"), err=subprocess.STDOUT,
                                          cwd=self.workdir)

    def restarts(self):
        """Launch's records of the job's restarts, in order."""
        return self.records.all("launch", "restart", name="job")

    def has(self, node, event, run, **fields):
        return self.records.has(node, event, run, **fields)

    def trains_again(self, run):
        """Whether the scheduler recorded a batch in run `run` or a later one (a run killed while
        it restored trains in the next)."""
        later = node_records.runs(self.records.of("scheduler"))[run:]
        return any(node_records.matches(r, "batch", {}) for records in later for r in records)

    def pid_in_run(self, name, run):
        """The pid launch started node `name` with in run `run` (its `spawned` records, one a run)."""
        spawned = self.records.all("launch", "spawned", name=name)
        return spawned[run]["child_pid"] if run < len(spawned) else None

    def processes(self):
        return [p for p in cluster_run.descendants(self.launch.pid) if cluster_run.alive(p)]

    def kill_all(self):
        """Kills launch and every process under it; returns what survives SIGKILL."""
        left = self.processes()
        cluster_run.kill_group(self.launch.pid)
        for pid in left:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        try:
            self.launch.wait(10)
        except subprocess.TimeoutExpired:
            return [f"troupe launch (pid {self.launch.pid})"]
        return [f"pid {p}" for p in left if cluster_run.alive(p)]


def trigger(trial, epochs, chaos):
    """(the scheduler's event, its fields, run index) at which the fault fires."""
    m, k = trial["moment"], trial["epoch"]
    if m == "checkpoint":
        return "saving", {"epoch": k + 1}, 0
    if m == "resume":
        return "restoring", {"epoch": resume_epoch(trial, epochs)}, 1
    _, event, fields = chaos.moment_trigger(trial)
    return event, fields, 0


def resume_epoch(trial, epochs):
    """The checkpoint a `resume` trial's first kill follows (1 .. epochs-1, so the restarted
    job has an epoch left to train)."""
    return min(trial["epoch"] + 1, epochs - 1)


def landed(trial, job, run, prefix, chaos):
    """Whether the job was still where the moment means when the fault fired."""
    m, k = trial["moment"], trial["epoch"]
    if m == "checkpoint":
        return not os.path.exists(manifest(prefix, k + 1))
    if m == "resume":
        return not job.has("scheduler", "restored", run)
    return chaos.moment_landed(trial, lambda event, **fields: job.has("scheduler", event, run, **fields))


def fault(job, trial, run, problems):
    """The trial's way, on its victim in run `run` (or on every process); the fault's time."""
    way = trial["way"]
    if way == "all":
        victims = job.processes()
        if len(victims) < len(job.nodes):
            problems.append(f"the job runs {len(victims)} processes at the moment, expected {len(job.nodes)}")
        at = time.time()
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return at
    pid = job.pid_in_run(trial["victim"], run)
    if pid is None:
        problems.append(f"no pid for {trial['victim']} at the moment")
        return None
    at = time.time()
    try:
        os.kill(pid, signal.SIGKILL if way == "kill" else signal.SIGSTOP)
    except ProcessLookupError:
        problems.append(f"{trial['victim']} (pid {pid}) was gone at the moment")
    return at


def run_restart_trial(troupe, trial, variant, config, common, reference, workdir, chaos, result):
    """Runs one trial of a restarting variant into `result` (problems, landed, seconds, ...)."""
    problems = result["problems"]
    epochs = chaos.EPOCHS
    prefix = prefix_of(workdir)
    os.makedirs(os.path.dirname(prefix))
    restarts = 2 if trial["moment"] == "resume" else variant["restarts"]
    command = [troupe, "launch", "-n", str(chaos.WORKERS), "-s", str(chaos.SERVERS), "--join-timeout",
               chaos.JOIN_TIMEOUT, "--grace", "5", "--max-restarts", str(restarts)] + \
        (["--scheduler-restarts", "0"] if "scheduler-restart" in chaos.FEATURES else []) + ["--"] + common + \
        ["--model-prefix", prefix]
    job = RestartJob(troupe, workdir, chaos.NODES)
    job.start(command)
    fault_at = None
    try:
        if trial["way"] != "none":
            if trial["moment"] == "resume":  # the first loss, once epoch E is saved
                if not wait_for(job, ("saved", {"epoch": resume_epoch(trial, epochs)}), 0, problems, chaos):
                    return
                kill = dict(trial, way="kill")
                if fault(job, kill, 0, problems) is None:
                    return
            event, fields, run = trigger(trial, epochs, chaos)
            saving = None
            if trial["moment"] == "checkpoint":  # a part of the epoch on disk (or being written), no manifest
                saving = (prefix, trial["epoch"] + 1)
            if not wait_for(job, (event, fields), run, problems, chaos, saving):
                return
            fault_at = fault(job, trial, run, problems)
            if fault_at is None:
                return
            result["landed"] = landed(trial, job, run, prefix, chaos)
            result["newest_at_fault"] = newest_manifest(prefix)
        else:
            fault_at = time.time()
        expect_runs = 0 if trial["way"] == "none" else (2 if trial["moment"] == "resume" else 1)
        seen = watch_restarts(job, fault_at, expect_runs, chaos.RUN_BOUND_S + chaos.DETECT_BOUND_S, result)
        try:
            code = job.launch.wait(max(0.1, fault_at + chaos.RUN_BOUND_S + chaos.DETECT_BOUND_S - time.time()))
        except subprocess.TimeoutExpired:
            problems.append(f"troupe launch still runs {chaos.RUN_BOUND_S + chaos.DETECT_BOUND_S} s after the fault")
            return
        result["codes"] = {"launch": code}
        problems += check(trial, code, seen, expect_runs, restarts, result, reference, job, epochs)
    finally:
        left = job.processes()
        if job.launch.poll() is None:
            left = [job.launch.pid] + left
        if left:
            problems.append(f"processes left behind: {left}")
        problems += [f"{p} survives SIGKILL" for p in job.kill_all()]
        if fault_at is not None and result.get("seconds") is None:
            result["seconds"] = round(time.time() - fault_at, 2)


def part_written(prefix, epoch):
    """Whether a part of `epoch`'s checkpoint is on disk, whole or still being written (its
    temporary file): seen straight from the file system, sooner than the scheduler's save record."""
    folder, stem = os.path.split(prefix)
    start = f"{stem}-{epoch:04d}."
    try:
        return any(f.startswith(start) and ".manifest." not in f for f in os.listdir(folder))
    except OSError:
        return False


def wait_for(job, moment, run, problems, chaos, saving=None):
    """Until the scheduler's records of run `run` hold `moment` = (event, fields) (or, with
    `saving` = (prefix, epoch), a part of that epoch is on disk); False, with the problem, if the
    job ends first."""
    event, fields = moment
    deadline = time.time() + chaos.START_BOUND_S + (chaos.RUN_BOUND_S if run else 0)
    while not ((saving and part_written(*saving)) or job.has("scheduler", event, run, **fields)):
        if job.launch.poll() is not None:
            problems.append(f"the job ended before the moment ({event} {fields} in run {run}'s scheduler)")
            return False
        if time.time() > deadline:
            problems.append(f"no {event} {fields} in run {run}'s scheduler within the bound")
            return False
        time.sleep(0.001 if saving else chaos.POLL_S)
    return True


def watch_restarts(job, since, runs, bound, result):
    """Until launch exits: when each restart record and each restarted run's first batch record
    came, in seconds from `since` (the restart's cost: detection + restart + resume)."""
    seen = []  # (restart's seconds, training again's seconds or None) per restart
    deadline = since + bound
    while time.time() < deadline:
        restarts = len(job.restarts())
        while len(seen) < restarts:
            seen.append([round(time.time() - since, 2), None])
        for k, entry in enumerate(seen):
            if entry[1] is None and job.trains_again(k + 1):
                entry[1] = round(time.time() - since, 2)
        if job.launch.poll() is not None:
            break
        time.sleep(0.02)
    if seen:
        result["restart_s"], result["training_again_s"] = seen[-1]
    return seen


def check(trial, code, seen, expect_runs, restarts, result, reference, job, epochs):
    problems = []
    # (exit code, restart number, of, checkpoint epoch or None) per restart, as launch records them
    lines = [(r["code"], r["count"], r["of"], r["epoch"] if r["epoch"] >= 0 else None) for r in job.restarts()]
    result["restarted_from"] = [int(epoch or 0) for _, _, _, epoch in lines]
    if code != 0:
        problems.append(f"troupe launch exited {code}, expected 0 (the job restarts)")
    ended = job.records.last("scheduler", "ended", len(lines))
    got = ended.get("weights") if ended else None
    if got != reference:
        problems.append(f"weights {got}, in one process {reference}")
    if trial["moment"] == "ending" and trial["way"] != "none":
        expect_runs = len(lines) if len(lines) <= 1 else 1  # the job may have finished as it was lost
    if len(lines) != expect_runs:
        problems.append(f"{len(lines)} restart line(s), expected {expect_runs}")
    for k, (status, number, of, epoch) in enumerate(lines[:expect_runs]):
        if int(number) != k + 1 or int(of) != restarts:
            problems.append(f"restart line {k + 1} says restart {number} of {of}, expected {k + 1} of {restarts}")
    if lines and trial["moment"] == "checkpoint" and trial["way"] != "none":
        saving = trial["epoch"] + 1
        epoch = int(lines[0][3] or 0)
        # the newest whole checkpoint: the one before the save that was under way, or that save
        # itself when its manifest was written after all; never a torn one (the launcher reads
        # only manifests, written last)
        if not result["newest_at_fault"] <= epoch <= saving:
            problems.append(f"restarted from epoch {epoch}; whole checkpoints at the fault went to epoch "
                            f"{result['newest_at_fault']}, the save under way was epoch {saving}")
    if trial["moment"] == "resume" and len(lines) >= 2:
        if int(lines[1][3] or 0) < resume_epoch(trial, epochs):
            problems.append(f"the second restart resumes from epoch {lines[1][3] or 0}, older than the "
                            f"first's {resume_epoch(trial, epochs)}")
    for k, (restart_s, again_s) in enumerate(seen):
        if again_s is None and k < len(lines) and int(lines[k][3] or 0) < epochs:
            problems.append(f"restart {k + 1}: no batch record in the restarted job")
    return problems
