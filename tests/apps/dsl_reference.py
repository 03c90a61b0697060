#!/usr/bin/env python3
"""docs/dsl.md's key tables are the key table's reference (`troupe check --reference`): each
block between `<!-- keys: SECTION -->` and `<!-- end keys -->` must equal the block the binary
prints for that section, and every section the binary prints must have its block in the docs.
With --fix, rewrites the docs' blocks from the binary (the way to change a key's text is to
change the key table, then run this with --fix).

usage: dsl_reference.py TROUPE DSL_MD [--fix]"""
import re
import subprocess
import sys

BLOCK = re.compile(r"<!-- keys: (\w+) -->\n.*?<!-- end keys -->\n", re.S)


def blocks(text):
    return {m.group(1): m.group(0) for m in BLOCK.finditer(text)}


def main():
    troupe, docs = sys.argv[1], sys.argv[2]
    fix = "--fix" in sys.argv[3:]
    run = subprocess.run([troupe, "check", "--reference"], capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        sys.exit(f"FAIL: troupe check --reference exited {run.returncode}: {run.stderr}")
    printed = blocks(run.stdout)
    if not printed or len(BLOCK.sub("", run.stdout).strip()) != 0:
        sys.exit(f"FAIL: the reference is not only key blocks:\n{run.stdout[:2000]}")
    with open(docs) as f:
        text = f.read()
    written = blocks(text)
    if fix:
        for section, block in printed.items():
            if section not in written:
                sys.exit(f"FAIL: {docs} has no block for section {section} to fix: add "
                         f"'<!-- keys: {section} -->' and '<!-- end keys -->' where it belongs")
            text = text.replace(written[section], block)
        with open(docs, "w") as f:
            f.write(text)
        print(f"rewrote {len(printed)} key blocks of {docs}")
        return
    missing = sorted(set(printed) - set(written))
    unknown = sorted(set(written) - set(printed))
    if missing or unknown:
        sys.exit(f"FAIL: sections without a block in {docs}: {missing}; blocks of no section: {unknown}")
    for section, block in printed.items():
        if written[section] != block:
            want, got = block.splitlines(), written[section].splitlines()
            first = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
            sys.exit(f"FAIL: {docs}, section {section}, row {first}: the docs say\n  "
                     f"{got[first] if first < len(got) else '(nothing)'}\nthe key table says\n  "
                     f"{want[first] if first < len(want) else '(nothing)'}\n"
                     f"(run tests/apps/dsl_reference.py TROUPE {docs} --fix after changing the key table)")
    print(f"ok: {len(printed)} sections, {sum(b.count(chr(10)) - 4 for b in printed.values())} keys")


if __name__ == "__main__":
    main()
