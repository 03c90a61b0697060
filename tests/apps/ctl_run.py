#!/usr/bin/env python3
"""`troupe ctl` against a cluster run started by hand (`troupe node`, on_worker_loss = adopt):

  status --json   once training is under way: the status schema (docs/operations.md, "The status
                  server") holds, and the document has the same shape and nodes as the one the
                  scheduler's status server serves at /status;
  status          the same as lines for a person (where the run is, every node);
  refusals        the wrong secret (exit 1, naming the secret), an unknown worker (exit 1, naming
                  the run's workers), a usage error (exit 2): the run goes on untouched;
  drain           `ctl drain worker_1` in epoch EPOCH: the scheduler asks worker 1 to leave, it
                  is drained and exits 0, its computes move to worker 0, and every node exits 0
                  with the weights of one process;
  after the end   `ctl status` with nothing listening fails at once, naming the address.
Those are scenario `drain` (give it epochs to spare after EPOCH: the ctl calls before the drain
must come while it trains). Scenario `stop` runs 5 epochs with `--model-prefix` and
`--save-period 10` (no save due before the last): `ctl checkpoint` once training has begun has the
epoch in training saved; `ctl stop` in a later epoch (EPOCH at the earliest) makes that one the
run's last: every node exits 0, the log says where, no later epoch trains, the last is validated
and saved, and each epoch's metrics line records its change; each of the two checkpoints resumed
by `troupe train` ends with the weights of `troupe train` run whole, so neither loses anything.

Scenario `set`: `ctl set` refused out of range (naming the range), for a key no running job
changes and without a value; then `ctl set lr=0.03` once training has begun and `ctl set
momentum=0.5` in a later epoch (EPOCH at the earliest): every node exits 0, the scheduler's log
names each change and its step, the metrics line of the epoch before records it, and the next
epoch trains at the new rate; its checkpoint after both changes, resumed by `troupe train`, ends
with its weights (the checkpoint holds what the changes set). The same run replayed with `--replay-changes` from that metrics
file makes the same changes at the same steps and ends with the same weights; one process
without the changes ends with others.

Scenario `switch` (an SSP config): `ctl set staleness=0.5` refused naming the range, then `ctl set
staleness=-1` (async from the next epoch) and, in a later epoch, `ctl set topology.staleness=1`
(SSP(1)): every node exits 0, each switch is logged and recorded with its step, and the run still
learns (validation accuracy at least MIN_ACCURACY).

usage: ctl_run.py TROUPE CONFIG drain|stop|set|switch EPOCH [troupe flags...]

Every wait has a deadline, moments come from log lines (no sleeps ordering events), and every
process is killed at the end whatever happens.
"""
import json
import os
import re
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_run import SECRET, Cluster, final_weights, in_process_weights, read_port, work_folder  # noqa: E402

BOUND_S = 300
# The stop scenario's epochs: the epochs after the one stopped are the slack that keeps the ctl
# calls ahead of the run's end on a loaded machine (its short epochs take about 2 s each).
STOP_EPOCHS = "5"
NUMBER = (int, float)
# The switch scenario's floor: an MLP on Fashion-MNIST that learns passes 0.8 in a few epochs; one
# that does not stays near 0.1.
MIN_ACCURACY = 0.8
# The status document's fields and their JSON types (None: null allowed beside the type).
TOP = {"schema": int, "state": str, "failure": (str, None), "time": NUMBER, "started": NUMBER,
       "run": dict, "epochs": int, "position": dict, "current": dict, "plan": dict, "ranks": list,
       "nodes": list, "history": list, "curve": list, "warnings": list, "faults": list,
       "changes": list, "nodes_lost": int}
POSITION = {"epoch": int, "batch": int, "batches": int, "step": int}
CURRENT = {"loss": NUMBER + (None,), "accuracy": NUMBER, "learning_rate": NUMBER, "samples_per_s": NUMBER}
NODE = {"name": str, "role": str, "host": str, "state": str, "adopted_by": (str, None), "ranks": list,
        "samples_per_s": NUMBER, "rx": int, "tx": int, "bytes": dict, "waited_for_s": NUMBER}
CHANGE = {"epoch": int, "step": int, "change": str, "by": str}
RANK = {"rank": int, "node": (str, None), "epoch": int, "batch": int, "batches": int, "samples": int,
        "samples_total": int, "samples_per_s": NUMBER, "step_s": NUMBER, "wait_s": NUMBER, "seen": NUMBER}


def wait_all_zero(cluster):
    """Waits (bounded) for every process of `cluster`; each must exit 0."""
    codes = cluster.wait_all(BOUND_S)
    bad = {n: c for n, c in codes.items() if c != 0}
    if bad:
        cluster.fail(f"exit statuses {bad}, expected 0")


def check_fields(where, value, fields):
    if not isinstance(value, dict):
        raise SystemExit(f"FAIL: {where} is {type(value).__name__}, not an object")
    if set(value) != set(fields):
        raise SystemExit(f"FAIL: {where} has fields {sorted(value)}, the schema {sorted(fields)}")
    for key, kinds in fields.items():
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        allowed = tuple(k for k in kinds if k is not None)
        if value[key] is None and None in kinds:
            continue
        if not isinstance(value[key], allowed) or isinstance(value[key], bool):
            raise SystemExit(f"FAIL: {where}.{key} is {value[key]!r}, not {kinds}")


def check_schema(doc):
    check_fields("status", doc, TOP)
    if doc["schema"] != 1:
        raise SystemExit(f"FAIL: schema {doc['schema']}, expected 1")
    check_fields("status.position", doc["position"], POSITION)
    check_fields("status.current", doc["current"], CURRENT)
    for i, node in enumerate(doc["nodes"]):
        check_fields(f"status.nodes[{i}]", node, NODE)
    for i, rank in enumerate(doc["ranks"]):
        check_fields(f"status.ranks[{i}]", rank, RANK)
    for i, change in enumerate(doc["changes"]):
        check_fields(f"status.changes[{i}]", change, CHANGE)


def ctl(cluster, args, secret=SECRET, timeout=60):
    env = dict(os.environ, TROUPE_SECRET=secret)
    run = subprocess.run([cluster.troupe, "ctl"] + args, capture_output=True, text=True, env=env,
                         timeout=timeout)
    return run


def expect(cluster, run, code, stream, pattern, what):
    text = run.stdout if stream == "out" else run.stderr
    if run.returncode != code or not re.search(pattern, text):
        cluster.fail(f"{what}: exit {run.returncode} (expected {code}), no /{pattern}/ in\n"
                     f"stdout: {run.stdout[-2000:]}\nstderr: {run.stderr[-2000:]}")


def start_nodes(cluster, config, workdir, flags, adopt=True):
    """A scheduler (its status served too), a server and 2 workers by hand (under on_worker_loss =
    adopt unless `adopt` is false: an SSP run keeps stop); the scheduler's address and its status URL
    once it trains."""
    common = (["--config", config, "--server-nodes", "1", "--worker-nodes", "2"]
              + (["--on-worker-loss", "adopt"] if adopt else []) + flags)
    port_file = os.path.join(workdir, "scheduler.port")
    cluster.start("scheduler", ["--role", "scheduler", "--scheduler", "127.0.0.1:0", "--port-file", port_file,
                                "--status-listen", "127.0.0.1:0"] + common)
    at = f"127.0.0.1:{read_port(cluster, port_file)}"
    cluster.start("server0", ["--role", "server", "--scheduler", at, "--rank", "0"] + common)
    for w in range(2):
        cluster.start(f"worker{w}", ["--role", "worker", "--scheduler", at, "--rank", str(w)] + common)
    cluster.wait_for_text("scheduler", "out", r"Epoch\[0\] Batch")
    return at, re.search(r"Status: (http://\S+/)", cluster.text("scheduler", "out")).group(1)


def saved_epochs(prefix):
    """The epochs (epochs done) whose cluster checkpoint manifest is under `prefix`."""
    folder = os.path.dirname(prefix)
    return sorted(int(m.group(1)) for f in os.listdir(folder)
                  if (m := re.fullmatch(re.escape(os.path.basename(prefix)) + r"-(\d{4})\.manifest\.json", f)))


def check_change(cluster, record, change, epoch):
    """`record` (epoch `epoch`'s metrics line) records exactly the change `change` by troupe ctl."""
    changes = record.get("changes")
    if (not isinstance(changes, list) or len(changes) != 1 or changes[0].get("change") != change
            or changes[0].get("by") != "troupe ctl" or not isinstance(changes[0].get("step"), int)
            or not re.match(rf"epoch {epoch} at (batch \d+ of \d+|validation)", changes[0].get("asked_at", ""))):
        cluster.fail(f"epoch {epoch}'s metrics line records {changes!r}, not one {change} by troupe ctl")


def stop(troupe, config, epoch, rest, workdir):
    cluster = Cluster(troupe, workdir)
    prefix = os.path.join(workdir, "runs", "stopped")
    try:
        metrics = os.path.join(workdir, "metrics.jsonl")
        flags = rest + ["--num-epochs", STOP_EPOCHS, "--model-prefix", prefix, "--save-period", "10", "--metrics", metrics]
        at, _ = start_nodes(cluster, config, workdir, flags)
        run = ctl(cluster, ["--scheduler", at, "stop", "now"])
        expect(cluster, run, 2, "err", r"stop takes no arguments", "ctl stop with an argument")
        # A checkpoint, though none is due before the last (save period 10), then a stop after it.
        run = ctl(cluster, ["--scheduler", at, "checkpoint"])
        expect(cluster, run, 0, "out", r"(this|the next) epoch is saved after its training and validation", "ctl checkpoint")
        print("$ troupe ctl checkpoint\n" + run.stdout, end="")
        cluster.wait_for_text("scheduler", "err", r": saving a checkpoint: epoch \d+ is saved")
        log = cluster.text("scheduler", "err")
        saved = int(re.search(r"after epoch (\d+)'s training \(step \d+\), as troupe ctl asked[^\n]*: saving a "
                              r"checkpoint", log).group(1))
        cluster.wait_for_text("scheduler", "out", rf"Epoch\[{max(saved + 1, int(epoch))}\] Batch")
        run = ctl(cluster, ["--scheduler", at, "stop"])
        expect(cluster, run, 0, "out", r"the run stops after (this|the next) epoch's training", "ctl stop")
        print("$ troupe ctl stop\n" + run.stdout, end="")
        wait_all_zero(cluster)
        out, log = cluster.text("scheduler", "out"), cluster.text("scheduler", "err")
        if not re.search(r"scheduler: troupe ctl asks the run to stop after (this|the next) epoch's training \(now epoch ", log):
            cluster.fail("the scheduler does not say ctl asked it to stop")
        found = re.search(r"scheduler: after epoch (\d+)'s training \(step \d+\), as troupe ctl asked[^\n]*: "
                          r"stopping: epoch \d+ is the run's last", log)
        if not found:
            cluster.fail("the scheduler does not say where it stopped")
        last = int(found.group(1))
        if re.search(rf"Epoch\[{last + 1}\]", out) or not re.search(rf"Epoch\[{last}\] Validation-accuracy=", out):
            cluster.fail(f"the run stopped after epoch {last} trained past it or did not validate it")
        epochs = [r for r in map(json.loads, open(metrics)) if r.get("record") == "epoch"]
        if [r["epoch"] for r in epochs] != list(range(last + 1)):
            cluster.fail(f"the metrics hold epochs {[r['epoch'] for r in epochs]}, not 0..{last}")
        check_change(cluster, epochs[saved], "checkpoint", saved)
        if last != saved:
            check_change(cluster, epochs[last], "stop", last)
        if any("changes" in r for i, r in enumerate(epochs) if i not in (saved, last)):
            cluster.fail("an epoch without a change records one")
        if saved_epochs(prefix) != sorted({saved + 1, last + 1}):
            cluster.fail(f"checkpoints of epochs {saved_epochs(prefix)}, expected those of {saved + 1} (asked) "
                         f"and {last + 1} (the last)")
        whole = in_process_weights(troupe, config, ["--num-epochs", STOP_EPOCHS] + rest, workdir)
        for done in sorted({saved + 1, last + 1}):
            resumed = in_process_weights(troupe, config, ["--num-epochs", STOP_EPOCHS, "--model-prefix", prefix,
                                                          "--load-epoch", str(done)] + rest, workdir)
            if resumed != whole:
                cluster.fail(f"the checkpoint of epoch {done} resumed ends with {resumed}, the whole run with {whole}")
        for line in log.splitlines():
            if "troupe ctl" in line:
                print(line)
        print(f"ok: ctl checkpoint saved epoch {saved + 1}, ctl stop ended the run after epoch {last}: every node "
              f"exit 0; each checkpoint resumed ends with {whole} as the whole run")
    finally:
        cluster.kill_all()


def made_changes(cluster, log):
    """(epoch, step, what) of each shard change the scheduler's log says it made."""
    return [(int(e), int(s), w) for e, s, w in
            re.findall(r"scheduler: after epoch (\d+)'s training \(step (\d+)\), as [^\n]*asked[^\n]*: "
                       r"((?:optimizer|topology)\.\w+=-?[\d.e-]+) from now on in every server's shards", log)]


def status_lists_change(cluster, at, epoch, step, change):
    """`ctl status --json` lists `change`, made after `epoch`'s training from `step` on, and
    `ctl status` writes it."""
    run = ctl(cluster, ["--scheduler", at, "status", "--json"])
    expect(cluster, run, 0, "out", r"^\{", "ctl status --json")
    doc = json.loads(run.stdout)
    check_schema(doc)
    listed = [(c["epoch"], c["step"], c["change"], c["by"]) for c in doc["changes"]]
    if (epoch, step, change, "troupe ctl") not in listed:
        cluster.fail(f"ctl status --json lists the changes {listed}, without {change} at step {step}")
    run = ctl(cluster, ["--scheduler", at, "status"])
    expect(cluster, run, 0, "out", rf"changes:\n(  .*\n)*  {re.escape(change)} from step {step} \(after epoch "
           rf"{epoch}'s training; troupe ctl\)", "ctl status")


def two_changes(cluster, at, epoch, first, second):
    """`ctl set` of `first` once training has begun and, once the scheduler made it, of `second` in a
    later epoch (EPOCH at the earliest), each (what ctl is given, the words it is made as); waits for
    every process to exit 0 and returns the changes made, which must be those two."""
    for i, (asked, words) in enumerate((first, second)):
        if i == 1:
            cluster.wait_for_text("scheduler", "err", re.escape(first[1]) + " from now on")
            after, step, _ = made_changes(cluster, cluster.text("scheduler", "err"))[0]
            status_lists_change(cluster, at, after, step, "set " + first[1])
            cluster.wait_for_text("scheduler", "out", rf"Epoch\[{max(after + 1, int(epoch))}\] Batch")
        run = ctl(cluster, ["--scheduler", at, "set", asked])
        expect(cluster, run, 0, "out", re.escape(words) + " from the first step after (this|the next) epoch's training",
               f"ctl set {asked}")
        print(f"$ troupe ctl set {asked}\n" + run.stdout, end="")
    wait_all_zero(cluster)
    made = made_changes(cluster, cluster.text("scheduler", "err"))
    if [w for _, _, w in made] != [first[1], second[1]]:
        cluster.fail(f"the scheduler made {made}, not {first[1]} then {second[1]}")
    return made


def run_with_changes(troupe, config, epoch, rest, workdir):
    """`ctl set` twice while it trains (refusals first); the changes made, the final weights, and the
    metrics file."""
    os.makedirs(workdir, exist_ok=True)
    cluster = Cluster(troupe, workdir)
    try:
        metrics = os.path.join(workdir, "metrics.jsonl")
        prefix = os.path.join(workdir, "runs", "changed")
        at, _ = start_nodes(cluster, config, workdir, rest + ["--metrics", metrics, "--model-prefix", prefix])
        run = ctl(cluster, ["--scheduler", at, "set", "lr=200"])
        expect(cluster, run, 1, "err", r"set optimizer\.lr=200: out of range: optimizer\.lr must be above 0 and at "
               r"most 100", "ctl set out of range")
        run = ctl(cluster, ["--scheduler", at, "set", "optimizer.beta1=0.5"])
        expect(cluster, run, 1, "err", r"no key a running job can change \(it changes optimizer\.lr, "
               r"optimizer\.momentum, optimizer\.wd, topology\.staleness\)", "ctl set of another key")
        run = ctl(cluster, ["--scheduler", at, "set", "lr"])
        expect(cluster, run, 2, "err", r"set takes one KEY=VALUE", "ctl set without a value")
        made = two_changes(cluster, at, epoch, ("lr=0.03", "optimizer.lr=0.03"),
                           ("momentum=0.5", "optimizer.momentum=0.5"))
        return made, final_weights(cluster.text("scheduler", "out")), metrics, prefix
    finally:
        cluster.kill_all()


def check_recorded(cluster, metrics, made, by, rate_set=0.03):
    """Each change in `made` is in its epoch's metrics line, by `by`, with its step; the next epoch's
    learning rate is `rate_set` (None: not checked)."""
    epochs = [r for r in map(json.loads, open(metrics)) if r.get("record") == "epoch"]
    for epoch, step, what in made:
        changes = epochs[epoch].get("changes", [])
        if [(c.get("change"), c.get("by"), c.get("step")) for c in changes] != [(f"set {what}", by, step)]:
            cluster.fail(f"epoch {epoch}'s metrics line records {changes!r}, not set {what} by {by} at step {step}")
    if rate_set is None:
        return
    lr_epoch = made[0][0] + 1
    rate = epochs[lr_epoch].get("learning_rate")  # its last step's, a float32's value
    if rate is None or abs(rate - rate_set) > 1e-6:
        cluster.fail(f"epoch {lr_epoch} trained at learning rate {rate}, not the 0.03 set before it")


def set_and_replay(troupe, config, epoch, rest, workdir):
    """Scenario `set`: a run changed by `ctl set`, then the same run replayed with --replay-changes from
    its metrics file: the same changes at the same steps, the same final weights; a run without
    the changes ends with others."""
    made, weights, metrics, prefix = run_with_changes(troupe, config, epoch, rest, os.path.join(workdir, "changed"))
    replay = Cluster(troupe, os.path.join(workdir, "changed"))
    check_recorded(replay, metrics, made, "troupe ctl")
    # The checkpoint after both changes holds what they set: resumed in one process, it ends as
    # the changed run did.
    after = made[-1][0] + 1
    resumed = in_process_weights(troupe, config, rest + ["--model-prefix", prefix, "--load-epoch", str(after)],
                                 os.path.join(workdir, "changed"))
    if resumed != weights:
        replay.fail(f"the checkpoint of epoch {after} resumed ends with {resumed}, the changed run with {weights}")
    folder = os.path.join(workdir, "replayed")
    os.makedirs(folder)
    cluster = Cluster(troupe, folder)
    try:
        again = os.path.join(folder, "metrics.jsonl")
        start_nodes(cluster, config, folder, rest + ["--metrics", again, "--replay-changes", metrics])
        wait_all_zero(cluster)
        replayed = made_changes(cluster, cluster.text("scheduler", "err"))
        if replayed != made:
            cluster.fail(f"the replay made {replayed}, the recorded run {made}")
        check_recorded(cluster, again, made, "--replay-changes")
        if final_weights(cluster.text("scheduler", "out")) != weights:
            cluster.fail(f"the replay ends with {final_weights(cluster.text('scheduler', 'out'))}, "
                         f"the recorded run with {weights}")
        unchanged = in_process_weights(troupe, config, rest, folder)
        if unchanged == weights:
            cluster.fail("the run without the changes ends with the same weights: the changes changed nothing")
        for e, s, w in made:
            print(f"changed after epoch {e} (step {s}): {w}")
        print(f"ok: ctl set made each change at its step; the replay made the same and ends with {weights}, "
              f"as does the checkpoint of epoch {after} resumed; the run without changes ends with {unchanged}")
    finally:
        cluster.kill_all()


def switch(troupe, config, epoch, rest, workdir):
    """Scenario `switch`: an SSP run switched to async by `ctl set staleness=-1` once training has
    begun, then to SSP(1) in a later epoch (EPOCH at the earliest); a refused bound first. Every node
    exits 0, each switch is logged with its step and recorded in its epoch's metrics line, and the
    run still learns (validation accuracy at least MIN_ACCURACY)."""
    cluster = Cluster(troupe, workdir)
    try:
        metrics = os.path.join(workdir, "metrics.jsonl")
        at, _ = start_nodes(cluster, config, workdir, rest + ["--metrics", metrics], adopt=False)
        run = ctl(cluster, ["--scheduler", at, "set", "staleness=0.5"])
        expect(cluster, run, 1, "err", r"topology\.staleness must be between -1 and 1000000", "ctl set staleness=0.5")
        made = two_changes(cluster, at, epoch, ("staleness=-1", "topology.staleness=-1"),
                           ("topology.staleness=1", "topology.staleness=1"))
        check_recorded(cluster, metrics, made, "troupe ctl", rate_set=None)
        accuracies = re.findall(r"Validation-accuracy=([\d.]+)", cluster.text("scheduler", "out"))
        if not accuracies or float(accuracies[-1]) < MIN_ACCURACY:
            cluster.fail(f"validation accuracy {accuracies[-1:]} after the switches, below {MIN_ACCURACY}")
        for e, s, w in made:
            print(f"switched after epoch {e} (step {s}): {w}")
        print(f"ok: ssp(2) -> async -> ssp(1) while training; every node exit 0; validation accuracy "
              f"{accuracies[-1]} (at least {MIN_ACCURACY})")
    finally:
        cluster.kill_all()


def main(workdir):
    troupe, config, scenario, epoch = sys.argv[1:5]
    rest = sys.argv[5:]
    if scenario == "stop":
        return stop(troupe, config, epoch, rest, workdir)
    if scenario == "set":
        return set_and_replay(troupe, config, epoch, rest, workdir)
    if scenario == "switch":
        return switch(troupe, config, epoch, rest, workdir)
    if scenario != "drain":
        raise SystemExit(f"usage: ctl_run.py TROUPE CONFIG drain|stop|set|switch EPOCH: not {scenario}")
    cluster = Cluster(troupe, workdir)
    try:
        at, url = start_nodes(cluster, config, workdir, rest)

        run = ctl(cluster, ["--scheduler", at, "status", "--json"])
        expect(cluster, run, 0, "out", r"^\{", "ctl status --json")
        doc = json.loads(run.stdout)
        check_schema(doc)
        with urllib.request.urlopen(url + "status", timeout=10) as r:
            served = json.loads(r.read().decode())
        check_schema(served)
        names = [n["name"] for n in doc["nodes"]]
        if names != [n["name"] for n in served["nodes"]] or names != ["scheduler", "server_0", "worker_0", "worker_1"]:
            cluster.fail(f"ctl's nodes {names}, /status's {[n['name'] for n in served['nodes']]}")
        if doc["state"] not in ("training", "validating") or sorted(r["rank"] for r in doc["ranks"]) != [0, 1, 2, 3]:
            cluster.fail(f"ctl status: state {doc['state']}, ranks {[r['rank'] for r in doc['ranks']]}")

        run = ctl(cluster, ["--scheduler", at, "status"])
        expect(cluster, run, 0, "out", r"run: (training|validating), epoch \d+ of \d+, step \d+", "ctl status")
        expect(cluster, run, 0, "out", r"worker_1 \(worker on [^)]*\): ready; ranks 2,3, ", "ctl status")
        print("$ troupe ctl status\n" + run.stdout, end="")

        run = ctl(cluster, ["--scheduler", at, "--timeout", "20", "status"], secret="not-the-secret-of-this-run-at-all")
        expect(cluster, run, 1, "err", r"troupe ctl: error: .*secret", "ctl with the wrong secret")
        run = ctl(cluster, ["--scheduler", at, "drain", "worker_7"])
        expect(cluster, run, 1, "err", r"drain worker_7: no worker of this run is named so \(its workers: "
               r"worker_0, worker_1\)", "ctl drain of an unknown worker")
        run = ctl(cluster, ["status"])
        expect(cluster, run, 2, "err", r"--scheduler HOST:PORT is required", "ctl without --scheduler")

        cluster.wait_for_text("scheduler", "out", rf"Epoch\[{epoch}\] Batch")
        run = ctl(cluster, ["--scheduler", at, "drain", "worker_1"])
        expect(cluster, run, 0, "out", r"asked worker 1 \(pid \d+ [^)]*\) to leave", "ctl drain worker_1")
        print("$ troupe ctl drain worker_1\n" + run.stdout, end="")
        cluster.wait_for_text("worker1", "err", r"worker_1: drained at ")
        wait_all_zero(cluster)
        log = cluster.text("scheduler", "err")
        for pattern in [r"scheduler: troupe ctl asks worker 1 \(pid \d+ [^)]*\) to leave",
                        r"asks to leave \(troupe ctl drain\); granted: compute_\d+(, compute_\d+)* move to another",
                        r"left at [^;]* \(drained: troupe ctl drain\); worker 0 \(pid \d+ [^)]*\) adopts compute_"]:
            if not re.search(pattern, log):
                cluster.fail(f"no /{pattern}/ in the scheduler's log")
        got = final_weights(cluster.text("scheduler", "out"))
        expected = in_process_weights(troupe, config, rest, workdir)
        if got != expected:
            cluster.fail(f"the run drained by ctl ended with {got}, one process with {expected}")

        run = ctl(cluster, ["--scheduler", at, "--timeout", "5", "status"])
        expect(cluster, run, 1, "err", rf"no scheduler at {re.escape(at)}", "ctl status after the run")
        ends = [l for l in log.splitlines() if "channel to ctl" in l]
        if len(ends) != 1 or "refused: its proof of the cluster secret is wrong" not in ends[0]:
            cluster.fail(f"the scheduler logged of ctl's channels {ends}; only the refused secret is news")
        for line in log.splitlines():
            if re.search(r"troupe ctl|leave|left|adopts|serves the computes", line):
                print(line)
        print(f"ok: ctl status (schema of /status) and its refusals; ctl drain worker_1 in epoch {epoch}: "
              f"every node exit 0, {got} as in one process")
    finally:
        cluster.kill_all()


if __name__ == "__main__":
    with work_folder("troupe-ctl-") as folder:
        main(folder)
