#!/usr/bin/env python3
"""Tests of scripts/emulated_hosts.py.

usage: emulated_hosts_test.py parse|hosts|leftovers

  parse      link text -> rate and latency, and the refusals naming what is wrong (no root needed)
  hosts      three shaped hosts: each namespace holds its own address on the bridge, both ends of
             every host's veth pair carry tbf at the rate asked, hosts reach each other over TCP (the
             throughput is printed, not judged), one step's exchange pattern completes every round
             and no faster than the link allows, paced no faster than its pace allows, colocated only
             between hosts, fails with an unknown congestion control, and nothing of the run is left
  leftovers  everything is deleted when the body raises, and when a process holding hosts gets SIGINT,
             SIGTERM or SIGHUP in the middle (it signals it is ready on a pipe, no sleeps)

`hosts` and `leftovers` need root: skipped (77) otherwise.
"""
import os
import re
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import emulated_hosts as eh  # noqa: E402


def fail(why):
    print(f"FAIL: {why}")
    raise SystemExit(1)


def check_parse():
    link = eh.parse_link("1gbit")
    if link.rate_bits != 1e9 or link.latency_ms != 0:
        fail(f"1gbit parsed as {link.rate_bits}, {link.latency_ms}")
    link = eh.parse_link("10gbit,500us")
    if link.rate_bits != 1e10 or abs(link.latency_ms - 0.5) > 1e-12:
        fail(f"10gbit,500us parsed as {link.rate_bits}, {link.latency_ms}")
    if eh.parse_rate("250mbit") != 2.5e8:
        fail("250mbit")
    for bad, says in (("1gb", "unit"), ("", "RATE"), ("1gbit,2", "latency"), ("0gbit", "positive"),
                      ("1gbit,1ms,3", "RATE[,LATENCY]")):
        try:
            eh.parse_link(bad)
        except ValueError as e:
            if says not in str(e):
                fail(f"'{bad}' refused without naming {says}: {e}")
            continue
        fail(f"'{bad}' was accepted")
    if eh.tbf_burst_bytes(1e9) != 128 * 1024 or eh.tbf_burst_bytes(1e10) != 1250000:
        fail(f"tbf buckets {eh.tbf_burst_bytes(1e9)}, {eh.tbf_burst_bytes(1e10)}")
    print("ok: parse: rates, latencies and refusals")


def check_hosts():
    eh.need_root()
    names = ["scheduler", "server0", "worker0"]
    with eh.EmulatedHosts(names, eh.parse_link("1gbit")) as hosts:
        number = hosts.number
        if len(set(hosts.addr.values())) != 3:
            fail(f"addresses not distinct: {hosts.addr}")
        for name in names:
            out = hosts.run(name, ["ip", "-o", "-4", "addr"], capture_output=True, text=True).stdout
            mine = re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", out)
            if sorted(mine) != sorted(["127.0.0.1", hosts.addr[name]]):
                fail(f"{name} holds {mine}, expected its own {hosts.addr[name]} and loopback")
            inner = hosts.run(name, ["tc", "qdisc", "show", "dev", hosts.inner[name]],
                              capture_output=True, text=True).stdout
            outer = subprocess.run(["tc", "qdisc", "show", "dev", hosts.outer[name]],
                                   capture_output=True, text=True).stdout
            for end, text in (("inner", inner), ("bridge-side", outer)):
                if not re.search(r"qdisc tbf .*rate 1Gbit", text):
                    fail(f"{name}'s {end} veth is not shaped to 1Gbit: {text.strip()}")
        bits = eh.measure_throughput(hosts, "worker0", "server0", seconds=0.5)
        if bits <= 0:
            fail("no bytes crossed from worker0 to server0")
        there, back = eh.measure_both_ways(hosts, "worker0", "server0", seconds=0.5)
        if there <= 0 or back <= 0:
            fail(f"both ways at once: {there} and {back} bits/s: a direction moved nothing")
        print(f"ok: hosts: {hosts.addr}; tbf 1Gbit at both ends; worker0 -> server0 {bits / 1e6:.0f} Mbit/s, "
              f"both ways at once {there / 1e6:.0f} and {back / 1e6:.0f} Mbit/s (not judged)")
        # One step's bytes over raw TCP: worker0 with two servers, 2 MB each way per pair. worker0's
        # uplink carries 4 MB a round, which 1 Gbit cannot move in less than 32 ms (less tbf's bucket).
        rounds = eh.measure_exchange(hosts, ["worker0"], ["server0", "scheduler"], 2_000_000, rounds=2)
        if len(rounds) != 2:
            fail(f"exchange: {len(rounds)} timings for 2 rounds")
        if min(rounds) < 0.8 * 4e6 * 8 / 1e9:
            fail(f"exchange: a round took {min(rounds) * 1000:.1f} ms, faster than the 1 Gbit link allows")
        print(f"ok: hosts: exchange rounds {', '.join(f'{t * 1000:.0f}' for t in rounds)} ms (not judged)")
        # Paced as troupe node --link-mbit paces: told 100 Mbit, worker0 sends each of its two servers at
        # 6.25 MB/s, so 2 MB a pair cannot take less than 0.32 s, on a link that would move it in 16 ms.
        paced = eh.measure_exchange(hosts, ["worker0"], ["server0", "scheduler"], 2_000_000, rounds=1,
                                    congestion="cubic", link_bits=100e6)
        if min(paced) < 0.8 * 2e6 / (100e6 / 8 / 2):
            fail(f"exchange paced at 100 Mbit: a round took {min(paced) * 1000:.0f} ms, faster than the pace allows")
        try:
            eh.measure_exchange(hosts, ["worker0"], ["server0"], 1000, rounds=1, congestion="no-such-tcp")
            fail("exchange with an unknown congestion control did not fail")
        except RuntimeError as e:
            if "did not start" not in str(e) and "did not connect" not in str(e):
                fail(f"exchange with an unknown congestion control: {e}")
        # Colocated (server0 also a worker): only the pairs between hosts exchange; none at all takes 0 s.
        both = eh.measure_exchange(hosts, ["worker0", "server0"], ["worker0", "server0"], 2_000_000, rounds=1)
        if min(both) < 0.8 * 2e6 * 8 / 1e9:
            fail(f"colocated exchange: a round took {min(both) * 1000:.1f} ms, faster than the link allows")
        if eh.measure_exchange(hosts, ["worker0"], ["worker0"], 2_000_000, rounds=2) != [0.0, 0.0]:
            fail("an exchange with one host as both worker and server must cross nothing (0 s a round)")
        print(f"ok: hosts: exchange paced at a 100 Mbit share took {min(paced) * 1000:.0f} ms; an unknown "
              "congestion control fails")
    left = eh.leftovers(number)
    if left:
        fail(f"left behind after a normal exit: {left}")
    print(f"ok: hosts: nothing of run {number} left")
    script = os.path.join(HERE, "..", "..", "scripts", "emulated_hosts.py")
    for bad in (["--bytes", "0"], ["--bytes", "1e6", "--servers", "0"], ["--bytes", "1e6", "--link", "0gbit"],
                ["--bytes", "1e6", "--workers", "2", "--servers", "1", "--colocated"]):
        run = subprocess.run([sys.executable, script, "exchange"] + bad, capture_output=True, text=True, timeout=30)
        if run.returncode == 0 or not re.search(r"positive|--link|as many --servers as --workers", run.stderr):
            fail(f"exchange {' '.join(bad)}: exit {run.returncode}, {run.stderr.strip()!r}")
    print("ok: hosts: exchange refuses sizes, counts and links that are not positive, and colocated hosts "
          "of unequal counts")


HOLDER = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
import emulated_hosts as eh
with eh.EmulatedHosts(["a", "b"], eh.parse_link("1gbit")) as hosts:
    sleeper = hosts.start("a", ["sleep", "600"])
    print(hosts.number, sleeper.pid, flush=True)
    sys.stdin.read()   # until the test signals us (or closes the pipe)
"""


def check_leftovers():
    eh.need_root()
    number = None
    try:
        with eh.EmulatedHosts(["a", "b"], eh.parse_link("10gbit")) as hosts:
            number = hosts.number
            raise KeyError("raised inside the body")
    except KeyError:
        pass
    if number is None or eh.leftovers(number):
        fail(f"after an exception: {eh.leftovers(number)}")
    print(f"ok: leftovers: an exception in the body left nothing of run {number}")
    scripts = os.path.join(HERE, "..", "..", "scripts")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, scripts], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = holder.stdout.readline().split()
        if len(line) != 2:
            holder.kill()
            fail(f"the holder did not start: {holder.communicate(timeout=30)}")
        number, sleeper = int(line[0]), int(line[1])
        if not eh.leftovers(number):
            fail(f"run {number} shows nothing while it holds hosts (the check would prove nothing)")
        holder.send_signal(sig)
        try:
            _, err = holder.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            holder.kill()
            fail(f"the holder still runs 60 s after {sig.name}")
        left = eh.leftovers(number)
        if left:
            fail(f"{sig.name} left {left}")
        if os.path.exists(f"/proc/{sleeper}"):
            fail(f"{sig.name} left the process the holder started in a host (pid {sleeper})")
        print(f"ok: leftovers: {sig.name} to a holder of run {number}: exit {holder.returncode}, nothing left")


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("parse", "hosts", "leftovers"):
        raise SystemExit(__doc__)
    {"parse": check_parse, "hosts": check_hosts, "leftovers": check_leftovers}[sys.argv[1]]()


if __name__ == "__main__":
    main()
