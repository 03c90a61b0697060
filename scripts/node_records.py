"""Reads the nodes' event records (`troupe node --events FILE`, `troupe launch --events FOLDER`;
docs/operations.md "Event records"): one JSON object a line, each with t, event, role, rank and
pid, then its own fields.

Scripts find pids, moments and outcomes here, never in the log lines written for people. A
file is read as it grows: only whole lines count (a record is written with one write(2), so a
line without its newline is one still arriving, or the last of a killed node).

    records = Folder(workdir + "/events")
    records.first("scheduler", "batch", epoch=1, batch=8)   # a dict, or None
"""
import json
import os


def read(path):
    """The whole records of file `path` ([] while there is none)."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    records = []
    for line in text.split("\n")[:-1]:  # the part after the last newline is not whole yet
        if line.strip():
            try:
                records.append(json.loads(line))
            except ValueError:
                pass  # not a record (a file that is no records file): ignored, as a log line would be
    return records


def matches(record, event, fields):
    return record.get("event") == event and all(record.get(k) == v for k, v in fields.items())


def runs(records):
    """A node's records split where the node started again (each `started` opens a run): a file
    under `troupe launch --max-restarts` holds one run per start of the job."""
    split = []
    for r in records:
        if r.get("event") == "started" or not split:
            split.append([])
        split[-1].append(r)
    return split


class Folder:
    """The record files of one run, by node: <folder>/<node>.jsonl (scheduler, server_0,
    worker_1, spare_0, launch)."""

    def __init__(self, folder):
        self.folder = folder

    def path(self, node):
        return os.path.join(self.folder, f"{node}.jsonl")

    def of(self, node, run=None):
        """Node `node`'s records: all of them, or those of its start number `run` (0: the first)."""
        records = read(self.path(node))
        if run is None:
            return records
        split = runs(records)
        return split[run] if run < len(split) else []

    # (the node is `node`, not `name`: a field of launch's records is called name)
    def all(self, node, event, run=None, **fields):
        """Node `node`'s records of `event` whose fields hold the given values."""
        return [r for r in self.of(node, run) if matches(r, event, fields)]

    def first(self, node, event, run=None, **fields):
        found = self.all(node, event, run, **fields)
        return found[0] if found else None

    def last(self, node, event, run=None, **fields):
        found = self.all(node, event, run, **fields)
        return found[-1] if found else None

    def has(self, node, event, run=None, **fields):
        return self.first(node, event, run, **fields) is not None
