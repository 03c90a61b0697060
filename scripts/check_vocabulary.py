#!/usr/bin/env python3
"""One word per concept (docs/architecture.md, "Vocabulary"): fails, naming file, line and rule,
where a tracked source, script, config or doc uses an old word for a concept that has its own.

usage: check_vocabulary.py [--root DIR] [PATH...]

Without paths it checks every file git tracks under DIR (default: the repository holding this
script) except the history (docs/notes/, docs/gpu_runs/, docs/results.jsonl). Exit 0: none found;
1: each use printed as `FILE:LINE: RULE: the text`; 2: bad usage.

Each rule is a phrase that only the old sense of a word makes (a "link to" a peer is a channel,
"replicas = 2" a shard backup), not the bare word, which keeps its other senses: a host's network
link, a compute's model replica. Lines that name an old flag or key on purpose (still read, for
scripts that have it) say so ("old name", "the old") and pass.
"""
import argparse
import os
import re
import subprocess
import sys

RULES = [
    # A connection between two nodes is a channel; link is a host's network link.
    ("channel", r"\blinks? (to|with) (the |a |its |every |each )?(peer|server|scheduler|worker|node|backup)"),
    ("channel", r"\b(peer|TCP|paced|admitted|accepted|member) links?\b"),
    ("channel", r"\blinks? between (processes|nodes)\b"),
    ("channel", r"\b(link_lost|link_up|on_link_|scheduler_link|link_traffic|link_side|link_push_order)\w*"),
    ("channel", r"\b(worker|server|backup|answering|fake|over|close|compression)_links?\b"),
    # A copy of a server's shards on another server is a backup; a replica is a compute's model.
    ("backup", r"\breplicas = 2\b|--replicas\b|\bcluster\.replicas\b|\bnodes\.replicas\b"),
    ("backup", r"\breplicated shards?\b|\bshard replicas?\b|\breplica_ring\b|\bmember_replicas\b"),
    # A local actor standing for a remote one is a proxy; stand-in is the compute stand-in.
    ("proxy", r"\bremote stand-ins?\b|\bstand-ins? for (its|a|the|every) (shard|remote|actor)"),
    # A compute's index is its rank, a pusher's index on a route its source.
    ("rank", r"\b(push|batch_report|wiring|gradient_push)(\.|::)worker\b|\bpush from worker\b"),
]
PASSES = re.compile(r"\bold\b|still read|old_replicas|replicas_(out_of_range|need_two_servers|read_as|beside)")
HISTORY = ("docs/notes/", "docs/gpu_runs/", "docs/results.jsonl")
SELF = ("scripts/check_vocabulary.py", "tests/scripts/check_vocabulary_test.py")
TEXT = re.compile(r"\.(cpp|hpp|h|capnp|py|sh|md|troupe|txt|cmake|in)$|CMakeLists\.txt$|^\.ci/run$")


def tracked(root):
    listed = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if listed.returncode != 0:
        sys.exit(f"check_vocabulary: {root} is not a git checkout: {listed.stderr.strip()}")
    return [p for p in listed.stdout.split("\n")
            if p and TEXT.search(p) and not p.startswith(HISTORY) and p not in SELF]


COMPILED = [(name, re.compile(rule, re.I)) for name, rule in RULES]


def uses(path, text):
    for number, line in enumerate(text.split("\n"), 1):
        if PASSES.search(line):
            continue
        for name, rule in COMPILED:
            if rule.search(line):
                yield f"{path}:{number}: {name}: {line.strip()[:160]}"
                break


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    p.add_argument("paths", nargs="*")
    args = p.parse_args()
    paths = args.paths or tracked(args.root)
    found = []
    for path in paths:
        full = path if os.path.isabs(path) else os.path.join(args.root, path)
        try:
            with open(full, encoding="utf-8", errors="replace") as f:
                found += uses(path, f.read())
        except OSError as e:
            print(f"check_vocabulary: cannot read {path}: {e.strerror}", file=sys.stderr)
            return 2
    for line in found:
        print(line)
    if found:
        print(f"check_vocabulary: {len(found)} use(s) of an old word (docs/architecture.md, \"Vocabulary\")",
              file=sys.stderr)
        return 1
    print(f"check_vocabulary: {len(paths)} files, one word per concept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
