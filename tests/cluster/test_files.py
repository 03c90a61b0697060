#!/usr/bin/env python3
"""Every cluster/ source has a test file of its own (tests/cluster/**/NAME_test.cpp) or a line
in tests/cluster/covered_by.txt naming the tests that cover it; every test that line names
exists, and no line names a source that is gone or that has its own test file now.

usage: test_files.py SOURCE_ROOT"""
import os
import sys


def main():
    root = sys.argv[1]
    sources = sorted(os.path.relpath(os.path.join(d, f), root)
                     for d, _, files in os.walk(os.path.join(root, "cluster"))
                     for f in files if f.endswith(".cpp"))
    own = {f[:-len("_test.cpp")] for _, _, files in os.walk(os.path.join(root, "tests", "cluster"))
           for f in files if f.endswith("_test.cpp")}
    table = os.path.join(root, "tests", "cluster", "covered_by.txt")
    covered, problems = {}, []
    with open(table) as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) < 2:
                problems.append(f"covered_by.txt:{number}: {words[0]} names no test")
            for test in words[1:]:
                if not os.path.isfile(os.path.join(root, test)):
                    problems.append(f"covered_by.txt:{number}: {test} does not exist")
            covered[words[0]] = number
    if not sources:
        problems.append(f"no sources under {root}/cluster")
    for source in sources:
        name = os.path.basename(source)[:-len(".cpp")]
        if name in own and source in covered:
            problems.append(f"covered_by.txt:{covered[source]}: {source} has a test file of its own")
        elif name not in own and source not in covered:
            problems.append(f"{source} has no test file (tests/cluster/.../{name}_test.cpp) and no "
                            f"line in covered_by.txt")
    for source, number in covered.items():
        if source not in sources:
            problems.append(f"covered_by.txt:{number}: {source} is no cluster source")
    if problems:
        sys.exit("FAIL:\n  " + "\n  ".join(problems))
    print(f"ok: {len(sources)} cluster sources, {len(sources) - len(covered)} with a test file of "
          f"their own, {len(covered)} covered by named tests")


if __name__ == "__main__":
    main()
