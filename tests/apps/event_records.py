#!/usr/bin/env python3
"""The nodes' event records (docs/operations.md "Event records") of a launched run, and the
errors of paths that cannot take them.

usage: event_records.py TROUPE CONFIG

`troupe launch -n 2 -s 1 --events FOLDER` trains CONFIG's job: launch.jsonl records each child
it spawned and how it exited; each node's own file opens with `started` under that child's pid;
the scheduler admitted every member under its real pid; every member recorded its join and its
assignment; the scheduler recorded every epoch's end and ended with the final weights line it
printed; every node ended `finished` with code 0. Every record carries t, event, role, rank and
pid. Then `troupe node --events` and `troupe launch --events` given a path that cannot be
written exit 2 naming the flag and the path, before anything starts.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from cluster_run import BOUND_S, final_weights, work_folder  # noqa: E402  (shared)
import node_records  # noqa: E402  (the reader the chaos scripts use)

SERVERS, WORKERS = 1, 2
MEMBERS = [f"server_{s}" for s in range(SERVERS)] + [f"worker_{w}" for w in range(WORKERS)]
NODES = ["scheduler"] + MEMBERS


def fail(why, records=None):
    if records:
        for name in ["launch"] + NODES:
            print(f"----- {name}.jsonl\n" + "\n".join(str(r) for r in records.of(name)))
    raise SystemExit(f"FAIL: {why}")


def check_launched(troupe, config, workdir):
    folder = os.path.join(workdir, "events")
    run = subprocess.run([troupe, "launch", "-n", str(WORKERS), "-s", str(SERVERS), "--events", folder,
                          "--config", config, "--num-epochs", "2"],
                         capture_output=True, text=True, cwd=workdir, timeout=BOUND_S)
    records = node_records.Folder(folder)
    if run.returncode != 0:
        fail(f"launch exited {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}", records)
    for name in ["launch"] + NODES:
        for r in records.of(name):
            missing = [k for k in ("t", "event", "role", "rank", "pid") if k not in r]
            if missing or not isinstance(r["t"], float):
                fail(f"{name}'s record {r} lacks {missing or 't as a float'}", records)
    pids = {}
    for name in NODES:
        spawned = records.all("launch", "spawned", name=name)
        if len(spawned) != 1:
            fail(f"launch recorded {len(spawned)} spawns of {name}, expected 1", records)
        pids[name] = spawned[0]["child_pid"]
        first = records.of(name)[:1]
        if not first or first[0]["event"] != "started" or first[0]["pid"] != pids[name]:
            fail(f"{name}'s records do not open with `started` under pid {pids[name]}", records)
        exited = records.first("launch", "exited", name=name, child_pid=pids[name])
        if not exited or exited["code"] != 0 or exited["signal"] != 0:
            fail(f"launch recorded {name}'s exit as {exited}, expected code 0", records)
        ended = records.last(name, "ended")
        if not ended or (ended["outcome"], ended["code"], ended["pid"]) != ("finished", 0, pids[name]):
            fail(f"{name} ended {ended}, expected finished with code 0 under pid {pids[name]}", records)
    for name in MEMBERS:
        role, rank = name.split("_")
        admitted = records.first("scheduler", "admitted", member=name)
        if not admitted or admitted["member_pid"] != pids[name] or admitted["member_role"] != role:
            fail(f"the scheduler admitted {name} as {admitted}, expected pid {pids[name]}", records)
        if not records.has(name, "joined", pid=pids[name]):
            fail(f"{name} recorded no join", records)
        assigned = records.first(name, "assigned")
        if not assigned or assigned["name"] != name or assigned["rank"] != int(rank):
            fail(f"{name} was assigned {assigned}", records)
        if not records.has(name, "ready", rank=int(rank)):
            fail(f"{name} recorded no ready with its rank", records)
    for epoch in (0, 1):
        if not records.has("scheduler", "trained", epoch=epoch):
            fail(f"the scheduler recorded no end of epoch {epoch}'s training", records)
    if not records.has("scheduler", "assembled") or not records.has("scheduler", "batch", epoch=1):
        fail("the scheduler recorded neither every node ready nor epoch 1's batches", records)
    printed = final_weights("\n".join(l.removeprefix("[scheduler] ") for l in run.stdout.splitlines()))
    if not printed or records.last("scheduler", "ended").get("weights") != printed:
        fail(f"the scheduler's ended record does not hold its printed weights ({printed})", records)
    if records.last("launch", "ended") is None or records.last("launch", "ended")["code"] != 0:
        fail("launch recorded no end with code 0", records)
    print(f"ok: launch --events: every node's join under its real pid, each epoch's end, every `ended`; {printed}")


def check_bad_paths(troupe, config, workdir):
    blocker = os.path.join(workdir, "a-file")
    with open(blocker, "w") as f:
        f.write("not a folder\n")
    env = dict(os.environ, TROUPE_SECRET="troupe-test-secret-0123456789abcdef")
    cases = [
        ("--events", os.path.join(workdir, "missing", "scheduler.jsonl"),
         [troupe, "node", "--role", "scheduler", "--scheduler", "127.0.0.1:0", "--config", config,
          "--events", os.path.join(workdir, "missing", "scheduler.jsonl")]),
        ("--events", blocker,
         [troupe, "launch", "-n", "1", "-s", "1", "--events", blocker, "--config", config]),
        ("--events", os.path.join(blocker, "sub"),
         [troupe, "launch", "-n", "1", "-s", "1", "--events", os.path.join(blocker, "sub"), "--config", config]),
    ]
    for flag, path, command in cases:
        run = subprocess.run(command, capture_output=True, text=True, cwd=workdir, env=env, timeout=60)
        if run.returncode != 2 or flag not in run.stderr or path not in run.stderr:
            fail(f"{' '.join(command[1:3])} {flag} {path}: exit {run.returncode}, expected 2 naming the flag "
                 f"and the path\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
        if "Epoch[" in run.stdout or "[scheduler]" in run.stdout + run.stderr:
            fail(f"{' '.join(command[1:3])} {flag} {path}: started before it refused the path")
    print("ok: --events paths that cannot be written: exit 2 naming the flag and the path, nothing started")


def main():
    troupe, config = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    with work_folder("troupe-events-") as workdir:
        check_bad_paths(troupe, config, workdir)
        check_launched(troupe, config, workdir)


if __name__ == "__main__":
    main()
