#!/usr/bin/env python3
"""Checks a `--timeline` file against the Chrome trace-event format and against what a
training run must show.
usage: check_timeline.py FILE PROCESSES [--require [PROCESS/]TRACK:SPAN ...] | --self-test

The format: a {"traceEvents": [...]} object; every event has name, ph, ts, pid and tid; ph is
one of B, E, X, i, M; an X has a duration >= 0; on each (pid, tid) timestamps never decrease in
file order, every B has its E and B/E pairs nest, and X spans nest (one starting inside another
ends inside it). The run: PROCESSES processes, each named by an "M" process_name event; some
compute's forward, backward and push spans; and some push of a compute starting before that
compute's backward of the same step ends (pushes overlap backward); in a merged file (one with
"process_labels" events) every server and worker process on the scheduler's clock. Each
--require [PROCESS/]TRACK:SPAN asks for some X span named SPAN on a track whose name starts with
TRACK ("shard_:apply": a shard's applies), in a process whose name starts with PROCESS where one
is given ("worker/checkpoint:write"). --self-test checks that the checker refuses broken traces
(each rule once)."""
import json
import sys

PHASES = {"B", "E", "X", "i", "M"}


def check_format(events):
    """Raises AssertionError naming the first event that breaks a rule of the format."""
    last_ts, open_b, open_x = {}, {}, {}
    for n, e in enumerate(events):
        for field in ("name", "ph", "ts", "pid", "tid"):
            assert field in e, f"event {n} has no {field}: {e}"
        assert e["ph"] in PHASES, f"event {n}: unknown ph {e['ph']!r}"
        assert isinstance(e["ts"], (int, float)), f"event {n}: ts {e['ts']!r} is not a number"
        track = (e["pid"], e["tid"])
        assert e["ts"] >= last_ts.get(track, e["ts"]), \
            f"event {n}: ts {e['ts']} before the previous {last_ts[track]} on pid/tid {track}"
        last_ts[track] = e["ts"]
        if e["ph"] == "B":
            open_b.setdefault(track, []).append(e["name"])
        elif e["ph"] == "E":
            assert open_b.get(track), f"event {n}: an E with no B open on pid/tid {track}"
            open_b[track].pop()
        elif e["ph"] == "X":
            assert isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, \
                f"event {n}: an X without a duration >= 0: {e}"
            stack = open_x.setdefault(track, [])
            while stack and stack[-1] <= e["ts"]:
                stack.pop()
            end = e["ts"] + e["dur"]
            assert not stack or end <= stack[-1], \
                f"event {n}: X {e['name']!r} [{e['ts']}, {end}] overlaps the end {stack[-1]} " \
                f"of the span it starts in on pid/tid {track} (not nested)"
            stack.append(end)
    for track, names in open_b.items():
        assert not names, f"B {names} never ended on pid/tid {track}"


def thread_names(events):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in events
            if e["ph"] == "M" and e["name"] == "thread_name"}


def check_run(events, processes):
    named = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    pids = {e["pid"] for e in events}
    assert len(named) == processes and pids == named, \
        f"{len(named)} named processes of {len(pids)}, expected {processes}"
    labels = {e["pid"]: e["args"]["labels"] for e in events
              if e["ph"] == "M" and e["name"] == "process_labels"}
    if labels:
        for e in events:
            if e["ph"] == "M" and e["name"] == "process_name" and \
                    e["args"]["name"].startswith(("worker", "server")):
                assert "the scheduler's" in labels.get(e["pid"], ""), \
                    f"{e['args']['name']} is not on the scheduler's clock: {labels.get(e['pid'])!r}"
    names = thread_names(events)
    spans = {}  # (pid, compute track name, span name) -> spans
    for e in events:
        if e["ph"] != "X":
            continue
        track = names.get((e["pid"], e["tid"]), "")
        if track.startswith("compute ") and " pushes" in track:
            track = track[:track.index(" pushes")]
        spans.setdefault((e["pid"], track, e["name"]), []).append(e)
    for what in ("forward", "backward", "push"):
        assert any(k[2] == what for k in spans), f"no {what} span in the timeline"
    overlapping = 0
    for (pid, track, name), pushes in spans.items():
        if name != "push":
            continue
        backward_end = {b["args"]["step"]: (b["ts"], b["ts"] + b["dur"])
                        for b in spans.get((pid, track, "backward"), [])}
        for p in pushes:
            start, end = backward_end.get(p["args"]["step"], (None, None))
            if start is not None and start <= p["ts"] < end:
                overlapping += 1
    assert overlapping > 0, "no push starts before its compute's backward of that step ends"
    return overlapping


def check_required(events, required):
    """Each [PROCESS/]TRACK:SPAN of `required` names a span some track starting with TRACK holds
    (in a process whose name starts with PROCESS, where one is given)."""
    names = thread_names(events)
    processes = {e["pid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "process_name"}
    held = {(processes.get(e["pid"], ""), names.get((e["pid"], e["tid"]), ""), e["name"])
            for e in events if e["ph"] == "X"}
    for want in required:
        where, _, span = want.partition(":")
        process, _, track = where.rpartition("/")
        count = sum(1 for p, t, n in held
                    if p.startswith(process) and t.startswith(track) and n == span)
        assert count > 0, f"no {span!r} span on a track named {track}..." + \
            (f" in a process named {process}..." if process else "")


def refused(events, rule):
    try:
        check_format(events)
    except AssertionError as e:
        return rule in str(e)
    return False


def self_test():
    base = {"name": "a", "pid": 1, "tid": 1}
    assert refused([{"name": "a", "ph": "X", "ts": 0, "pid": 1}], "has no tid")
    assert refused([dict(base, ph="Q", ts=0)], "unknown ph")
    assert refused([dict(base, ph="i", ts=5), dict(base, ph="i", ts=4)], "before the previous")
    assert refused([dict(base, ph="E", ts=0)], "no B open")
    assert refused([dict(base, ph="B", ts=0)], "never ended")
    assert refused([dict(base, ph="X", ts=0)], "without a duration")
    assert refused([dict(base, ph="X", ts=0, dur=10), dict(base, ph="X", ts=5, dur=10)],
                   "not nested")
    check_format([dict(base, ph="X", ts=0, dur=10), dict(base, ph="X", ts=2, dur=3),
                  dict(base, ph="X", ts=10, dur=1), dict(base, ph="B", ts=11),
                  dict(base, ph="E", ts=12)])
    spans = [dict(base, name="thread_name", ph="M", ts=0, args={"name": "shard_0"}),
             dict(base, ph="X", name="apply", ts=1, dur=1)]
    check_required(spans, ["shard_:apply"])
    try:
        check_required(spans, ["server/shard_:apply"])
    except AssertionError as e:
        assert "in a process named server" in str(e)
    else:
        raise AssertionError("a span in no named process passed")
    try:
        check_required(spans, ["aggregator_:barrier"])
    except AssertionError as e:
        assert "no 'barrier' span" in str(e)
    else:
        raise AssertionError("a missing span passed")
    print("ok: the checker refuses each broken rule")


def main():
    if "--self-test" in sys.argv:
        return self_test()
    path, processes = sys.argv[1], int(sys.argv[2])
    required = [sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--require"]
    with open(path) as f:
        trace = json.load(f)
    assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list), \
        f"{path}: not a {{\"traceEvents\": [...]}} object"
    events = trace["traceEvents"]
    check_format(events)
    overlapping = check_run(events, processes)
    check_required(events, required)
    print(f"ok: {len(events)} events, {processes} process(es), "
          f"{overlapping} push(es) sent during their compute's backward")


if __name__ == "__main__":
    main()
