#!/usr/bin/env python3
"""Checkpoints of cluster runs, through real processes (docs/checkpoints.md).

usage: cluster_checkpoint.py TROUPE CONFIG SCENARIO

CONFIG is a bsp job of 2 epochs with 2 workers and 2 servers (cluster { servers = 2 ... }).

Scenarios:
  resume    `troupe launch -n 2 -s 2 --model-prefix` writes, after each epoch, one part per
            server and worker and a manifest naming them with their sizes and checksums, and
            ends with the weights of `troupe train`; then each of these resumes from epoch 1
            and ends with the same weights, bit for bit:
              the cluster checkpoint in one process (troupe train --load-epoch 1),
              a one-process checkpoint by a cluster of 2 servers,
              the 2-server checkpoint by a cluster of 1 server (keys re-sharded),
            the checkpoint of the last epoch resumed in one process and by the cluster trains
            nothing and ends exit 0 with the same weights,
            and `troupe eval` scores the cluster checkpoint.
  optimizers
            for each optimizer besides SGD (adam, adamw, rmsprop, adagrad, lamb, lars), CONFIG's
            job with that optimizer, one of the schedules (cosine with restarts, one-cycle, poly,
            step, multi-step, constant; some with a warm-up) and its keys sliced over both
            servers: the parts hold the optimizer's state tensors by their names and its update
            counts, and the cluster checkpoint of epoch 1 resumed by the same cluster, by 1
            server (keys re-sharded) and in one process, and a one-process checkpoint resumed in
            one process and by 2 servers, each end with the weights of `troupe train`, bit for
            bit.
  restart   `troupe launch --max-restarts 1 --model-prefix P` of 6 epochs; once the checkpoint
            of epoch 1 is saved, every process of the job is killed (SIGKILL): the launcher
            says it restarts from the last checkpoint saved (epoch 1 or, on a machine slow to
            deliver the kill, a later one, up to the last: the job's 5 other epochs are the slack
            that keeps the kill ahead of the job's end), and the job ends exit 0 with the weights of
            `troupe train` (torchrun-style restart of the whole job)
  refused   a cluster checkpoint with a part missing, a part truncated, a byte of a part
            flipped, or a manifest naming a part with another checksum: `troupe launch
            --load-epoch 1` exits non-zero before any other node starts (the scheduler reads the
            checkpoint first), naming the file at fault,
            and leaves no process behind.

Every launch runs in its own process group, killed at the end whatever happens; every wait
has a deadline.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_run import descendants, kill_group  # noqa: E402  (the same process handling as the other cluster tests)

BOUND_S = 180


def run(command, workdir):
    """Runs `command` in a process group of its own; returns (exit status, output)."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=workdir,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise SystemExit(f"FAIL: {' '.join(command)} ran past {BOUND_S} s")
    finally:
        kill_group(proc.pid)
    return proc.returncode, out


def digest(out):
    found = re.findall(r"Final weights: \d+ tensors, \d+ bytes, digest ([0-9a-f]{16})", out)
    return found[-1] if found else None


def expect_digest(what, command, workdir, expected):
    status, out = run(command, workdir)
    got = digest(out)
    if status != 0 or got is None:
        raise SystemExit(f"FAIL: {what}: exit {status}\n{out[-3000:]}")
    if expected is not None and got != expected:
        raise SystemExit(f"FAIL: {what}: digest {got}, the uninterrupted run's is {expected}\n{out[-2000:]}")
    print(f"ok: {what}: digest {got}")
    return got, out


def with_servers(config, servers, workdir):
    """A copy of CONFIG run by `servers` server processes holding `servers` shards."""
    text = open(config).read()
    text, n = re.subn(r"servers = \d+  workers = 2  server_nodes = \d+",
                      f"servers = {servers}  workers = 2  server_nodes = {servers}", text)
    if n != 1:
        raise SystemExit(f"FAIL: {config} does not hold the cluster line this test rewrites")
    path = os.path.join(workdir, f"servers{servers}.troupe")
    open(path, "w").write(text)
    return path


def launch(troupe, config, servers, flags, own=()):
    """`troupe launch` with its own flags `own`, then the nodes' flags."""
    return [troupe, "launch", "-n", "2", "-s", str(servers)] + list(own) + ["--config", config] + flags


def check_parts(prefix, epoch):
    manifest = f"{prefix}-{epoch:04d}.manifest.json"
    if not os.path.exists(manifest):
        raise SystemExit(f"FAIL: no manifest {manifest}")
    recorded = {p["file"]: p["bytes"] for p in json.load(open(manifest))["parts"]}
    nodes = ["server_0", "server_1", "worker_0", "worker_1"]
    if len(recorded) != len(nodes):
        raise SystemExit(f"FAIL: the manifest records {sorted(recorded)}, expected a part of each of {nodes}")
    for node in nodes:
        part = f"{prefix}-{epoch:04d}.{node}.safetensors"
        if not os.path.exists(part) or os.path.getsize(part) == 0:
            raise SystemExit(f"FAIL: no part {part}")
        if recorded.get(os.path.basename(part)) != os.path.getsize(part):
            raise SystemExit(f"FAIL: the manifest does not record {part} with its size: {recorded}")
    if os.path.exists(f"{prefix}-{epoch:04d}.safetensors"):
        raise SystemExit(f"FAIL: a one-process file beside the manifest of epoch {epoch}")


def scenario_resume(troupe, config, workdir):
    two = with_servers(config, 2, workdir)
    one = with_servers(config, 1, workdir)
    whole, _ = expect_digest("troupe train", [troupe, "train", "--config", two], workdir, None)
    cluster = os.path.join(workdir, "cluster", "m")
    expect_digest("launch -s 2 saving", launch(troupe, two, 2, ["--model-prefix", cluster]), workdir, whole)
    for epoch in (1, 2):
        check_parts(cluster, epoch)
    _, out = expect_digest("the cluster checkpoint resumed in one process",
                           [troupe, "train", "--config", two, "--model-prefix", cluster, "--load-epoch", "1"],
                           workdir, whole)
    if "Resuming from " + cluster + "-0001.manifest.json" not in out:
        raise SystemExit(f"FAIL: the resumed run does not name the manifest\n{out[-2000:]}")
    single = os.path.join(workdir, "single", "m")
    expect_digest("troupe train saving", [troupe, "train", "--config", two, "--model-prefix", single], workdir, whole)
    expect_digest("a one-process checkpoint resumed by 2 servers",
                  launch(troupe, two, 2, ["--model-prefix", single, "--load-epoch", "1"]), workdir, whole)
    expect_digest("the 2-server checkpoint resumed by 1 server",
                  launch(troupe, one, 1, ["--model-prefix", cluster, "--load-epoch", "1"]), workdir, whole)
    # The checkpoint of the last epoch (what a job restarted after saving it resumes from):
    # nothing is left to train, and the run ends exit 0 with the saved weights.
    for what, command in [("the last epoch's cluster checkpoint resumed in one process",
                           [troupe, "train", "--config", two, "--model-prefix", cluster, "--load-epoch", "2"]),
                          ("the last epoch's cluster checkpoint resumed by 2 servers",
                           launch(troupe, two, 2, ["--model-prefix", cluster, "--load-epoch", "2"]))]:
        _, out = expect_digest(what, command, workdir, whole)
        if "every epoch of the job was trained" not in out or re.search(r"Epoch\[\d+\] Batch", out):
            raise SystemExit(f"FAIL: {what}: trained again or did not say it had nothing to train\n{out[-2000:]}")
    status, out = run([troupe, "eval", "--config", two, "--model-prefix", cluster, "--load-epoch", "2"], workdir)
    if status != 0 or not re.search(r"accuracy", out, re.I):
        raise SystemExit(f"FAIL: troupe eval of the cluster checkpoint: exit {status}\n{out[-2000:]}")
    print("ok: troupe eval reads the cluster checkpoint")


# Each optimizer but SGD, its statement, the state tensors its parts must hold
# (update_rule.hpp's optimizer_state_names), and a schedule, so that every schedule's position
# is resumed too (the lr of epoch 1 differs from epoch 0's in each).
OPTIMIZERS = [
    ("adam", "adam(lr = 0.002)", ["exp_avg", "exp_avg_sq"], "cosine(cycle = 0.75, cycle_mult = 2, warmup = 0)"),
    ("adamw", "adamw(lr = 0.002, wd = 0.01)", ["exp_avg", "exp_avg_sq"], "one_cycle(pct_start = 0.4)"),
    ("rmsprop", "rmsprop(lr = 0.001, momentum = 0.5)", ["square_avg", "momentum_buffer"],
     "poly(power = 2, warmup = 0.25)"),
    ("adagrad", "adagrad(lr = 0.01)", ["sum"], "step(period = 0.5, factor = 0.5, warmup = 0)"),
    ("lamb", "lamb(lr = 0.002)", ["exp_avg", "exp_avg_sq"], "multi_step(steps = [75%], factor = 0.1, warmup = 0.5)"),
    ("lars", "lars(lr = 0.02, momentum = 0.9)", ["momentum_buffer"], "constant(warmup = 1.5)"),
]


def with_optimizer(config, name, statement, schedule, servers, workdir):
    """with_servers' copy of CONFIG with `statement` for its optimizer, `schedule` for its
    schedule and keys sliced small, so every parameter of the MLP but its biases is cut over
    the shards."""
    text = open(with_servers(config, servers, workdir)).read()
    text, n = re.subn(r"^optimizer .*$", "optimizer " + statement, text, flags=re.M)
    text, o = re.subn(r"^schedule .*$", "schedule  " + schedule, text, flags=re.M)
    text, m = re.subn(r"worker_nodes = (\d+) \}", r"worker_nodes = \1  slice_bytes = 4096 }", text)
    if n != 1 or o != 1 or m != 1:
        raise SystemExit(f"FAIL: {config} does not hold the optimizer, schedule and cluster lines this test rewrites")
    path = os.path.join(workdir, f"{name}_servers{servers}.troupe")
    open(path, "w").write(text)
    return path


def part_header(path):
    """The JSON header of a safetensors file."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(size))


def check_optimizer_part(prefix, name, states):
    header = part_header(f"{prefix}-0001.server_0.safetensors")
    meta = header.get("__metadata__", {})
    if meta.get("troupe.shard.0.optimizer") != name:
        raise SystemExit(f"FAIL: server_0's part names the optimizer {meta.get('troupe.shard.0.optimizer')!r}, "
                         f"not {name!r}")
    keys = meta["troupe.shard.0.keys"].split(",")
    steps = meta.get("troupe.shard.0.steps", "").split(",")
    if len(steps) != len(keys) or any(int(s) <= 0 for s in steps):
        raise SystemExit(f"FAIL: server_0's part counts updates {steps} for its {len(keys)} keys")
    for key in keys:
        for state in states:
            if f"{state}/{key}" not in header:
                raise SystemExit(f"FAIL: server_0's part has no {state}/{key}: {sorted(header)[:12]}")
    return len(keys)


def scenario_optimizers(troupe, config, workdir):
    for name, statement, states, schedule in OPTIMIZERS:
        two = with_optimizer(config, name, statement, schedule, 2, workdir)
        one = with_optimizer(config, name, statement, schedule, 1, workdir)
        whole, _ = expect_digest(f"{name}: troupe train", [troupe, "train", "--config", two], workdir, None)
        cluster = os.path.join(workdir, name, "cluster", "m")
        expect_digest(f"{name}: launch -s 2 saving", launch(troupe, two, 2, ["--model-prefix", cluster]), workdir,
                      whole)
        check_parts(cluster, 1)
        keys = check_optimizer_part(cluster, name, states)
        print(f"ok: {name}: server_0's part holds {'/'.join(states)} and an update count for each of its {keys} keys")
        resumed = ["--model-prefix", cluster, "--load-epoch", "1"]
        expect_digest(f"{name}: the cluster checkpoint resumed by 2 servers", launch(troupe, two, 2, resumed),
                      workdir, whole)
        expect_digest(f"{name}: the cluster checkpoint resumed by 1 server", launch(troupe, one, 1, resumed),
                      workdir, whole)
        expect_digest(f"{name}: the cluster checkpoint resumed in one process",
                      [troupe, "train", "--config", two] + resumed, workdir, whole)
        single = os.path.join(workdir, name, "single", "m")
        expect_digest(f"{name}: troupe train saving", [troupe, "train", "--config", two, "--model-prefix", single],
                      workdir, whole)
        from_single = ["--model-prefix", single, "--load-epoch", "1"]
        expect_digest(f"{name}: a one-process checkpoint resumed in one process",
                      [troupe, "train", "--config", two] + from_single, workdir, whole)
        expect_digest(f"{name}: a one-process checkpoint resumed by 2 servers", launch(troupe, two, 2, from_single),
                      workdir, whole)


def damaged_copy(source, target, damage):
    shutil.rmtree(os.path.dirname(target), ignore_errors=True)
    os.makedirs(os.path.dirname(target))
    for name in os.listdir(os.path.dirname(source)):
        if name.startswith(os.path.basename(source) + "-0001."):
            shutil.copy(os.path.join(os.path.dirname(source), name), os.path.dirname(target))
    return damage(target)


def scenario_refused(troupe, config, workdir):
    two = with_servers(config, 2, workdir)
    cluster = os.path.join(workdir, "cluster", "m")
    status, out = run(launch(troupe, two, 2, ["--model-prefix", cluster, "--num-epochs", "1"]), workdir)
    if status != 0:
        raise SystemExit(f"FAIL: launch saving: exit {status}\n{out[-3000:]}")
    check_parts(cluster, 1)

    def part(prefix):
        return f"{prefix}-0001.server_1.safetensors"

    def missing(prefix):
        os.remove(part(prefix))
        return part(prefix)

    def truncated(prefix):
        data = open(part(prefix), "rb").read()
        open(part(prefix), "wb").write(data[: len(data) // 2])
        return part(prefix)

    def flipped(prefix):
        data = bytearray(open(part(prefix), "rb").read())
        data[len(data) - 5] ^= 0x40
        open(part(prefix), "wb").write(bytes(data))
        return part(prefix)

    def other_checksum(prefix):
        manifest = f"{prefix}-0001.manifest.json"
        text = open(manifest).read()
        start = text.index("sha256:", text.index("server_1"))
        digit = text[start + 7]
        text = text[: start + 7] + ("0" if digit != "0" else "1") + text[start + 8:]
        open(manifest, "w").write(text)
        return part(prefix)

    for name, damage in [("missing", missing), ("truncated", truncated), ("flipped", flipped),
                         ("other-checksum", other_checksum)]:
        prefix = os.path.join(workdir, name, "m")
        at_fault = damaged_copy(cluster, prefix, damage)
        status, out = run(launch(troupe, two, 2, ["--model-prefix", prefix, "--load-epoch", "1"]), workdir)
        if status == 0:
            raise SystemExit(f"FAIL: a checkpoint with a {name} part resumed\n{out[-2000:]}")
        if at_fault not in out:
            raise SystemExit(f"FAIL: the refusal of a {name} part does not name {at_fault}\n{out[-3000:]}")
        if re.search(r"Epoch\[1\] Batch", out) or "starting 2 server(s)" in out:
            raise SystemExit(f"FAIL: a {name} part was found only after the nodes had started\n{out[-3000:]}")
        print(f"ok: {name} part refused before training, naming {os.path.relpath(at_fault, workdir)}")


def scenario_restart(troupe, config, workdir):
    two = with_servers(config, 2, workdir)
    flags = ["--num-epochs", "6"]
    whole, _ = expect_digest("troupe train", [troupe, "train", "--config", two] + flags, workdir, None)
    prefix = os.path.join(workdir, "restart", "m")
    proc = subprocess.Popen(launch(troupe, two, 2, ["--model-prefix", prefix] + flags, own=["--max-restarts", "1"]),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=workdir,
                            start_new_session=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        # The manifest is written last: once it is there, epoch 1's checkpoint is whole.
        deadline = time.time() + BOUND_S
        while not os.path.exists(f"{prefix}-0001.manifest.json"):
            if time.time() > deadline or proc.poll() is not None:
                raise SystemExit("FAIL: no checkpoint of epoch 1 appeared\n" + "".join(lines)[-3000:])
            time.sleep(0.05)
        nodes = descendants(proc.pid)
        if len(nodes) < 5:
            raise SystemExit(f"FAIL: the launch runs {len(nodes)} processes, expected 5")
        for pid in nodes:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        status = proc.wait(timeout=BOUND_S)
        reader.join(timeout=BOUND_S)
    finally:
        kill_group(proc.pid)
    out = "".join(lines)
    restarted = re.search(r"launch: the job failed \(exit \d+\); restart 1 of 1, from (\S+) \(epoch (\d+)\)", out)
    if not restarted:
        raise SystemExit(f"FAIL: the launcher does not say it restarts from a checkpoint\n{out[-4000:]}")
    got = digest(out)
    if status != 0 or got != whole:
        raise SystemExit(f"FAIL: the restarted job: exit {status}, digest {got}, expected {whole}\n{out[-3000:]}")
    print(f"ok: every process killed after epoch {restarted.group(2)}'s checkpoint; restarted from "
          f"{os.path.basename(restarted.group(1))}; exit 0, digest {got}")


def main():
    troupe, config, scenario = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="troupe-cluster-checkpoint-") as workdir:
        {"resume": scenario_resume, "restart": scenario_restart, "refused": scenario_refused,
         "optimizers": scenario_optimizers}[scenario](os.path.abspath(troupe),
                                                                         os.path.abspath(config), workdir)


if __name__ == "__main__":
    main()
