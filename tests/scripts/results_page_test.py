#!/usr/bin/env python3
"""Tests of scripts/results_page.py: docs/benchmarks.md and README.md say what docs/results.jsonl
holds (the check the ctest `scripts:results_page` runs), and the check catches a figure that
drifts in any of the three files.

usage: results_page_test.py
"""
import json
import os
import shutil
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import results_page  # noqa: E402

RESULTS = os.path.join(REPO, "docs", "results.jsonl")
PAGE = os.path.join(REPO, "docs", "benchmarks.md")
README = os.path.join(REPO, "README.md")
PAGE_LINES = 400  # the results page is read whole; the notebook under docs/notes/ holds the rest


def check(results=RESULTS, page=PAGE, readme=README):
    return results_page.main(["--check", "--results", results, "--page", page, "--readme", readme])


def copies(tmp):
    paths = []
    for src in (RESULTS, PAGE, README):
        dst = os.path.join(tmp, os.path.basename(src))
        shutil.copy(src, dst)
        paths.append(dst)
    return paths


def replace_once(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text, f"{old!r} not in {path}"
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))


def test_the_checked_in_files_agree():
    assert check() == 0, "run `python3 scripts/results_page.py` and commit what it rewrites"


def test_the_page_is_short_and_not_the_notebook():
    with open(PAGE) as f:
        lines = f.read().split("\n")
    assert len(lines) <= PAGE_LINES, f"docs/benchmarks.md has {len(lines)} lines (at most {PAGE_LINES})"
    assert any("notes/benchmarks-notebook.md" in line for line in lines)
    assert os.path.exists(os.path.join(REPO, "docs", "notes", "benchmarks-notebook.md"))


def test_every_figure_says_where_it_came_from():
    for r in results_page.load(RESULTS).values():
        if r["group"] == "machine":
            assert r.get("text"), r["id"]
            continue
        for key in ("figure", "command", "date", "commit", "machine"):
            assert isinstance(r.get(key), str) and r[key], f"{r['id']}: no {key}"
        assert "value" in r, f"{r['id']}: no value"
        assert r["value"] is not None or r.get("mark"), f"{r['id']}: neither a value nor a mark"


def test_a_changed_result_makes_the_check_fail():
    with tempfile.TemporaryDirectory() as tmp:
        results, page, readme = copies(tmp)
        replace_once(results, '"value": 0.9209', '"value": 0.9301')
        assert check(results, page, readme) == 1
        assert results_page.main(["--results", results, "--page", page, "--readme", readme]) == 0
        assert check(results, page, readme) == 0
        for path, figure in ((page, "0.9301"), (readme, "93.0%")):
            with open(path) as f:
                assert figure in f.read(), f"{path} was not rewritten with {figure}"


def test_a_figure_edited_by_hand_makes_the_check_fail():
    with tempfile.TemporaryDirectory() as tmp:
        for target, old, new in ((1, "**0.9209**", "**0.9210**"), (2, "92.1%", "92.5%")):
            paths = copies(tmp)
            replace_once(paths[target], old, new)
            assert check(*paths) == 1, f"an edit of {paths[target]} was not caught"


def test_a_later_record_of_an_id_wins_and_is_stamped():
    with tempfile.TemporaryDirectory() as tmp:
        results = os.path.join(tmp, "r.jsonl")
        results_page.append_records(results, [{"id": "x", "group": "g", "value": 1}], commit="abc1234")
        results_page.append_records(results, [{"id": "x", "group": "g", "value": 2, "date": "2026-01-01"}],
                                    commit="def5678")
        with open(results) as f:
            assert len(f.readlines()) == 2  # the history stays
        (r,) = results_page.load(results).values()
        assert r["value"] == 2 and r["date"] == "2026-01-01" and r["commit"] == "def5678"
        assert "cores" in r["machine"]


def test_a_bad_line_names_its_place():
    with tempfile.TemporaryDirectory() as tmp:
        results = os.path.join(tmp, "r.jsonl")
        with open(results, "w") as f:
            f.write(json.dumps({"id": "a", "group": "g"}) + "\n{not json\n")
        try:
            results_page.load(results)
        except results_page.ResultsError as e:
            assert f"{results}:2:" in str(e), e
        else:
            raise AssertionError("a bad line was read")


def main():
    tests = [(name, f) for name, f in sorted(globals().items()) if name.startswith("test_")]
    failed = 0
    for name, f in tests:
        try:
            f()
            print(f"ok   {name}")
        except AssertionError as e:
            failed += 1
            print(f"FAIL {name}: {e}")
    print(f"{len(tests) - failed} of {len(tests)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
