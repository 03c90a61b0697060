#!/usr/bin/env python3
"""scripts/check_vocabulary.py: the tree passes; each rule's old phrase fails naming file, line
and rule, while the words' own senses (a host's link, a compute's model replica, an old flag
named as such) pass; a path it cannot read is a usage error."""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
source = os.path.abspath(os.path.join(here, "..", ".."))
script = os.path.join(source, "scripts", "check_vocabulary.py")


def check(*args):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=120)


whole = check("--root", source)
assert whole.returncode == 0, whole.stdout + whole.stderr

old = [
    ("channel", "the link to server_0 closed"),
    ("channel", "every node paces its TCP links at an equal share"),
    ("channel", "heartbeats on every link between processes"),
    ("channel", "(link_lost_atom, link, caf::error)"),
    ("backup", "cluster { replicas = 2 }"),
    ("backup", "troupe launch -n 2 -s 2 --replicas 2"),
    ("proxy", "a channel to the server and a stand-in for its shard 0"),
    ("rank", "push.worker = route.source_index;"),
]
kept = [
    "the rate of each host's link per direction in Mbit/s",
    "On emulated hosts with 1 and 10 Gbit links",
    "a compute's model replica, with its buffers",
    "--replicas N, the old name of --shard-backups N - 1, is still read",
    "the channel to server_0 closed",
]
with tempfile.TemporaryDirectory(prefix="troupe_vocabulary_") as folder:
    path = os.path.join(folder, "words.md")
    with open(path, "w") as f:
        f.write("\n".join(text for _, text in old) + "\n" + "\n".join(kept) + "\n")
    done = check("--root", folder, path)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stdout.strip().split("\n")
    assert len(lines) == len(old), lines
    for number, ((rule, text), line) in enumerate(zip(old, lines), 1):
        assert line.startswith(f"{path}:{number}: {rule}: "), (line, rule)
    assert f"{len(old)} use(s) of an old word" in done.stderr, done.stderr

    missing = check("--root", folder, os.path.join(folder, "absent.md"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr, (missing.returncode, missing.stderr)
print(f"ok: the tree passes; {len(old)} old phrases named by rule, {len(kept)} proper uses pass")
