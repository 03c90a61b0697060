"""A training run with its status server, for the status tests that need a real one: started
in a session of its own (child_process), its URL read from its `Status:` line within a
deadline, ended (SIGINT, then killed) when the test is done with it, so nothing is left behind.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import child_process  # noqa: E402

SKIP = 77  # ctest's SKIP_RETURN_CODE for the suites here


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


class StatusRun:
    """`argv` (a troupe command with --status-listen 0) running in `workdir`."""

    def __init__(self, argv, workdir):
        self.log = os.path.join(workdir, "run.out")
        self.proc = child_process.start(["stdbuf", "-oL"] + argv, out=self.log, err=subprocess.STDOUT,
                                        cwd=workdir)
        self.url = None

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def wait_for_url(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = re.search(r"Status: (http://\S+/)", self.text())
            if found:
                self.url = found.group(1)
                return self.url
            if self.proc.poll() is not None:
                fail(f"the run ended ({self.proc.returncode}) before serving its status:\n{self.text()}")
            time.sleep(0.05)
        fail(f"no Status: line within {timeout} s:\n{self.text()}")

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return r.read().decode()

    def status(self):
        return json.loads(self.get("status"))

    def wait_until(self, what, check, timeout=120):
        """Polls /status until check(status) holds; the last status."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                fail(f"the run ended ({self.proc.returncode}) before {what}:\n{self.text()[-3000:]}")
            s = self.status()
            if check(s):
                return s
            time.sleep(0.1)
        fail(f"not within {timeout} s: {what}")

    def close(self):
        """Interrupts the run (Ctrl-C as a user would), then kills what is left of its group."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
                self.proc.wait(30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        child_process.end(self.proc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
