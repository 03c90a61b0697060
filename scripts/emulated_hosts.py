#!/usr/bin/env python3
"""Emulated hosts: each named host in a Linux network namespace of its own, on a private bridge, its link
shaped with tc, so several Troupe nodes on one machine talk as if over a real network.

Layout (root only): a bridge `teb<N>` in the root namespace (N: the first free number from pid % 10000,
which is also what makes two runs not collide), and per host a namespace `troupe-emu<N>-<host>` joined to
the bridge by a veth pair `tev<N>h<i>` (bridge side) / `tep<N>h<i>` (inside), holding address i+1 of a
private /24 (10.x.y.0, one no address or route of this machine overlaps). Shaping, when a rate is given:
tbf on both ends of every host's veth pair, so a host sends at most RATE (its inner end) and receives at
most RATE (the bridge end, whose egress is towards the host): full duplex, as an Ethernet port is. A
latency adds netem on the inner end only, so host to host one way is that latency. A server that W
workers push to is therefore held to RATE in, as the floor arithmetic of `troupe bench scaling` assumes.

Use it as a context manager; everything it made is deleted on exit, also on an exception, Ctrl-C,
SIGTERM or SIGHUP (processes started with `start` are killed first, by process group):

    with EmulatedHosts(["a", "b"], link=parse_link("1gbit,1ms")) as hosts:
        hosts.start("b", ["python3", "-c", "..."])
        hosts.run("a", ["ip", "addr"])

Command line (root): `emulated_hosts.py measure [--link 1gbit[,LAT]] [--seconds 3] [--streams 1] [--both-ways]`
prints the TCP throughput between two emulated hosts (`--both-ways`: each direction of one connection
that sends both ways at once); `emulated_hosts.py exchange --workers W --servers S --bytes M` times one
parameter-server step's bytes over raw TCP (each worker sends M/S to and receives M/S from each server, all
at once, one connection per pair; `--congestion NAME`, `--pace` at the link's equal shares and `--colocated`
as `troupe bench scaling` runs its nodes) against the floor of `troupe bench scaling`, the network's own ratio;
`emulated_hosts.py leftovers` lists namespaces and links
of emulated hosts that are not deleted (exit 1 if any).
"""
import argparse
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import child_process  # noqa: E402  (the one launcher of child processes, shared with the tests)

SKIP = 77                      # ctest's SKIP_RETURN_CODE for tests that need root
NS_PREFIX = "troupe-emu"       # namespaces: troupe-emu<N>-<host>
LINK_PREFIXES = ("teb", "tev")  # bridges teb<N>, bridge-side veths tev<N>h<i> (inner ends die with their namespace)
_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}


class Link:
    """How every emulated host's link is shaped: rate in bits/s (0: unshaped), one-way latency in ms."""

    def __init__(self, rate_bits=0.0, latency_ms=0.0):
        self.rate_bits, self.latency_ms = float(rate_bits), float(latency_ms)

    def __repr__(self):
        text = format_rate(self.rate_bits) if self.rate_bits else "unshaped"
        return text + (f",{self.latency_ms:g}ms" if self.latency_ms else "")


def parse_rate(text):
    """'1gbit' -> 1e9 bits/s (tc's units: bit, kbit, mbit, gbit, tbit)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?bit)\s*", text.lower())
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"link rate '{text}': expected a positive number and a unit (bit, kbit, mbit, gbit), "
                         "e.g. 1gbit")
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_link(text):
    """'RATE[,LATENCY]', e.g. '1gbit' or '10gbit,0.5ms' -> Link. Raises ValueError naming what is wrong."""
    parts = text.split(",")
    if len(parts) > 2 or not parts[0].strip():
        raise ValueError(f"link '{text}': expected RATE[,LATENCY], e.g. 1gbit or 1gbit,2ms")
    latency = 0.0
    if len(parts) == 2:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(us|ms|s)\s*", parts[1].lower())
        if not m:
            raise ValueError(f"link '{text}': latency '{parts[1]}' must be a number with us, ms or s, e.g. 2ms")
        latency = float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
    return Link(parse_rate(parts[0]), latency)


def format_rate(bits):
    for unit, scale in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bits >= scale:
            return f"{bits / scale:g}{unit}"
    return f"{bits:g}bit"


def tbf_burst_bytes(rate_bits):
    """tbf's bucket: a millisecond of traffic, at least 128 KiB (notes/cluster.md: 128kb at 1gbit gave
    951 Mbit/s, 1mb at 10gbit 9.38 Gbit/s; a smaller bucket starves the sender between ticks)."""
    return max(128 * 1024, int(rate_bits / 8 / 1000))


def need_root():
    """Exits 77 (skipped) with one line why, unless this can make namespaces (root, `ip` and `tc`)."""
    if os.geteuid() != 0:
        print(f"skipped: emulated hosts need root (network namespaces, tc); euid is {os.geteuid()}")
        raise SystemExit(SKIP)
    for tool in ("ip", "tc"):
        if not shutil.which(tool):
            print(f"skipped: no `{tool}` command (iproute2)")
            raise SystemExit(SKIP)


def _cmd(argv, timeout=20):
    try:
        run = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, f"{' '.join(argv)}: still runs after {timeout} s"
    return run.returncode, (run.stdout + run.stderr).strip()


def _ok(*argv):
    code, out = _cmd(list(argv))
    if code != 0:
        raise RuntimeError(f"emulated hosts: `{' '.join(argv)}` failed: {out}")
    return out


def _used_networks():
    """Every IPv4 network the root namespace has an address or a route in."""
    nets = []
    _, addrs = _cmd(["ip", "-o", "-4", "addr"])
    for cidr in re.findall(r"\binet (\S+)", addrs):
        nets.append(ipaddress.ip_interface(cidr).network)
    _, routes = _cmd(["ip", "-o", "-4", "route", "show", "table", "all"])
    for line in routes.splitlines():
        words = [w for w in line.split() if w not in ("unicast", "local", "broadcast", "multicast")]
        if not words or words[0] == "default":
            continue
        try:
            nets.append(ipaddress.ip_network(words[0], strict=False))
        except ValueError:
            pass
    return nets


def _free_subnet(seed):
    used = _used_networks()
    for k in range(200 * 256):
        n = (seed + k) % (200 * 256)
        net = ipaddress.ip_network(f"10.{40 + n // 256}.{n % 256}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError("emulated hosts: no free 10.x.y.0/24 on this machine")


def leftovers(number=None):
    """Namespaces and links of emulated hosts that still exist (of run `number`, or of any run)."""
    tag = "" if number is None else str(number)
    found = []
    _, names = _cmd(["ip", "netns", "list"])
    for line in names.splitlines():
        name = line.split()[0] if line.split() else ""
        if re.fullmatch(rf"{NS_PREFIX}{tag}{'' if tag else '[0-9]+'}-.+", name):
            found.append(f"namespace {name}")
    _, links = _cmd(["ip", "-o", "link"])
    for name in re.findall(r"^\d+: ([^:@]+)", links, re.M):
        if re.fullmatch(rf"(teb{tag}|tev{tag}h\d+)" if tag else r"(teb\d+|tev\d+h\d+)", name):
            found.append(f"link {name}")
    return found


class EmulatedHosts:
    """The bridge, namespaces, veth pairs and shaping of one set of emulated hosts, and the processes
    started in them. Attributes after create(): addr[host] (its IPv4 address), ns[host] (namespace),
    outer[host] (bridge-side veth), inner[host] (the host's own interface), number (N)."""

    def __init__(self, names, link=None):
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"emulated hosts: names must be distinct and non-empty, got {names}")
        if len(names) > 250:
            raise ValueError(f"emulated hosts: at most 250 hosts on one /24, got {len(names)}")
        self.names, self.link = list(names), link or Link()
        self.number, self.bridge, self.subnet = None, None, None
        self.addr, self.ns, self.outer, self.inner = {}, {}, {}, {}
        self._namespaces, self._veths, self._procs = [], [], []
        self._old_handlers = {}

    # --- life cycle -------------------------------------------------------------------------------
    def __enter__(self):
        self._catch_signals()
        try:
            self.create()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, kind, value, trace):
        left = self.destroy()
        self._restore_signals()
        if left and kind is None:
            raise RuntimeError(f"emulated hosts: left behind: {', '.join(left)}")
        if left:
            print(f"emulated hosts: left behind: {', '.join(left)}", file=sys.stderr)
        return False

    def _catch_signals(self):
        # SIGTERM (a test driver's timeout) and SIGHUP unwind as Ctrl-C does, so `finally` deletes.
        if threading_main():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old_handlers[sig] = signal.signal(sig, _exit_on_signal)

    def _restore_signals(self):
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._old_handlers = {}

    def create(self):
        base = os.getpid() % 10000
        for k in range(100):  # the bridge's name is the lock: the first free number is ours
            n = (base + k) % 10000
            code, out = _cmd(["ip", "link", "add", f"teb{n}", "type", "bridge"])
            if code == 0:
                break
            if "exists" not in out:
                raise RuntimeError(f"emulated hosts: cannot create a bridge: {out}")
        else:
            raise RuntimeError("emulated hosts: no free bridge name teb<N>")
        self.number, self.bridge = n, f"teb{n}"
        self.subnet = _free_subnet(os.getpid())
        addresses = list(self.subnet.hosts())
        for i, host in enumerate(self.names):
            ns, outer, inner = f"{NS_PREFIX}{n}-{host}", f"tev{n}h{i}", f"tep{n}h{i}"
            if os.path.exists(f"/run/netns/{ns}"):  # a SIGKILLed run with our number: ours now
                _cmd(["ip", "netns", "del", ns])
            _cmd(["ip", "link", "del", outer])
            _ok("ip", "netns", "add", ns)
            self._namespaces.append(ns)
            _ok("ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns)
            self._veths.append(outer)
            _ok("ip", "link", "set", outer, "master", self.bridge)
            _ok("ip", "link", "set", outer, "up")
            _ok("ip", "-n", ns, "link", "set", "lo", "up")
            _ok("ip", "-n", ns, "addr", "add", f"{addresses[i]}/{self.subnet.prefixlen}", "dev", inner)
            _ok("ip", "-n", ns, "link", "set", inner, "up")
            self.addr[host], self.ns[host], self.outer[host], self.inner[host] = str(addresses[i]), ns, outer, inner
            self._shape(ns, inner, outer)
        _ok("ip", "link", "set", self.bridge, "up")

    def _shape(self, ns, inner, outer):
        if not self.link.rate_bits:
            return
        rate = f"{int(self.link.rate_bits)}bit"
        tbf = ["tbf", "rate", rate, "burst", str(tbf_burst_bytes(self.link.rate_bits)), "latency", "20ms"]
        _ok("tc", "qdisc", "add", "dev", outer, "root", *tbf)  # what the host receives
        if self.link.latency_ms:
            _ok("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", inner, "root", "handle", "1:", *tbf)
            code, out = _cmd(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", inner, "parent", "1:1",
                              "handle", "10:", "netem", "delay", f"{self.link.latency_ms:g}ms", "limit", "100000"])
            if code != 0:
                why = ("this kernel has no netem (sch_netem)" if "unknown" in out else out)
                raise RuntimeError(f"emulated hosts: cannot add {self.link.latency_ms:g} ms of latency: {why}; "
                                   "give the link a rate alone (e.g. 1gbit)")
        else:
            _ok("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", inner, "root", *tbf)  # what it sends

    def destroy(self):
        """Kills the processes started here, deletes namespaces, veths and bridge; returns what is left."""
        left = self.kill_all()
        for ns in self._namespaces:  # deleting a namespace deletes the veth end inside, so the pair
            code, out = _cmd(["ip", "netns", "del", ns])
            if code != 0:
                left.append(f"namespace {ns} ({out})")
        for veth in self._veths:
            if _cmd(["ip", "link", "show", veth])[0] == 0:
                _cmd(["ip", "link", "del", veth])
        if self.bridge:
            code, out = _cmd(["ip", "link", "del", self.bridge])
            if code != 0:
                left.append(f"bridge {self.bridge} ({out})")
        if self.number is not None:
            left += [x for x in leftovers(self.number) if x not in left]
        self._namespaces, self._veths, self.bridge = [], [], None
        return left

    # --- processes ---------------------------------------------------------------------------------
    def command(self, host, argv):
        """argv run inside `host`'s namespace (`ip netns exec` execs it: the pid is the command's own)."""
        return ["ip", "netns", "exec", self.ns[host]] + list(argv)

    def start(self, host, argv, **popen_args):
        """Starts argv in `host` in a session of its own (killed with its group at the end)."""
        proc = child_process.start(self.command(host, argv), **popen_args)
        self._procs.append(proc)
        return proc

    def run(self, host, argv, timeout=60, **run_args):
        return subprocess.run(self.command(host, argv), timeout=timeout, **run_args)

    def kill_all(self):
        """SIGKILLs every process group started here that still runs; names any that will not die."""
        left = [f"process {proc.pid}" for proc in self._procs
                if proc.poll() is None and not child_process.end(proc)]
        self._procs = [p for p in self._procs if p.poll() is None]
        return left


def threading_main():
    import threading
    return threading.current_thread() is threading.main_thread()


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)


# --- host-to-host throughput -------------------------------------------------------------------------
_RECEIVER = r"""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 0)); s.listen(16); print(s.getsockname()[1], flush=True)
streams = int(sys.argv[2]); conns = [s.accept()[0] for _ in range(streams)]
import selectors
sel = selectors.DefaultSelector()
for c in conns: sel.register(c, selectors.EVENT_READ)
buf = bytearray(1 << 20); total = 0; first = None; open_ = streams
while open_:
    for key, _ in sel.select():
        n = key.fileobj.recv_into(buf)
        if n == 0:
            sel.unregister(key.fileobj); open_ -= 1; continue
        if first is None: first = time.monotonic()
        total += n
print(total, time.monotonic() - first, flush=True)
"""

_SENDER = r"""
import socket, sys, time, threading
host, port, seconds, streams = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
chunk = memoryview(bytearray(4 << 20))
def send():
    c = socket.create_connection((host, port)); end = time.monotonic() + seconds
    while time.monotonic() < end: c.sendall(chunk)
    c.close()
ts = [threading.Thread(target=send) for _ in range(streams)]
[t.start() for t in ts]; [t.join() for t in ts]
"""


# Both ways at once on one connection (as a channel carries pushes one way and answers the other):
# each end sends for SECONDS while it reads, then prints what it received per second.
_BOTH_WAYS = r"""
import socket, sys, threading, time
role, host, port, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
if role == "listen":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, 0)); s.listen(1); print(s.getsockname()[1], flush=True); c = s.accept()[0]
else:
    c = socket.create_connection((host, port))
got = [0, None, None]
def receive():
    buf = bytearray(1 << 20)
    while True:
        n = c.recv_into(buf)
        if n == 0: break
        now = time.monotonic(); got[0] += n; got[2] = now
        if got[1] is None: got[1] = now
t = threading.Thread(target=receive); t.start()
chunk = memoryview(bytearray(4 << 20)); end = time.monotonic() + seconds
while time.monotonic() < end: c.sendall(chunk)
c.shutdown(socket.SHUT_WR); t.join()
print(got[0] * 8 / (got[2] - got[1]) if got[0] and got[2] > got[1] else 0, flush=True)
"""


def measure_both_ways(hosts, a, b, seconds=3.0):
    """TCP bits/s (a to b, b to a) on one connection that carries both directions at once."""
    lis = hosts.start(b, [sys.executable, "-c", _BOTH_WAYS, "listen", hosts.addr[b], "0", str(seconds)],
                      stdout=subprocess.PIPE, text=True)
    port = lis.stdout.readline().strip()
    if not port:
        raise RuntimeError("both-ways probe: the listening end did not start")
    con = hosts.start(a, [sys.executable, "-c", _BOTH_WAYS, "connect", hosts.addr[b], port, str(seconds)],
                      stdout=subprocess.PIPE, text=True)
    a_got, _ = con.communicate(timeout=seconds + 30)
    b_got, _ = lis.communicate(timeout=30)
    if con.returncode or lis.returncode:
        raise RuntimeError(f"both-ways probe: exit statuses {con.returncode}, {lis.returncode}")
    return float(b_got), float(a_got)


def measure_throughput(hosts, sender, receiver, seconds=3.0, streams=1):
    """TCP bits/s from `sender` to `receiver` (python3 sockets, `streams` connections at once)."""
    rx = hosts.start(receiver, [sys.executable, "-c", _RECEIVER, hosts.addr[receiver], str(streams)],
                     stdout=subprocess.PIPE, text=True)
    port = rx.stdout.readline().strip()
    if not port:
        raise RuntimeError("throughput probe: the receiver did not start")
    hosts.run(sender, [sys.executable, "-c", _SENDER, hosts.addr[receiver], port, str(seconds), str(streams)],
              timeout=seconds + 30, check=True)
    out, _ = rx.communicate(timeout=30)
    total, elapsed = out.split()
    return int(total) * 8 / float(elapsed)


# One parameter-server step's bytes with nothing but TCP: every worker sends M/S bytes to every server
# while every server sends M/S bytes back to every worker, all at once, on one connection per pair
# (as the channels are). Each process waits for "go AT" on stdin (AT: a time.monotonic() instant,
# which every network namespace shares), starts at AT, and prints when its last byte came in.
# CONGESTION: the connections' TCP congestion control ("-": the host's default); PACE: bytes per second
# each connection's sender is paced at (SO_MAX_PACING_RATE; 0: not paced), as troupe node --link-mbit does.
_EXCHANGE = r"""
import socket, sys, threading, time
role, me, nbytes, congestion, pace = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
peers = sys.argv[6:]          # workers: server addresses; servers: the number of workers
SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)
def congest(c):
    if congestion == "-": return
    try: c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion.encode())
    except OSError as e: raise SystemExit(f"exchange: TCP congestion control {congestion!r}: {e.strerror}")
def tune(c):
    congest(c)
    if pace: c.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, pace)
    c.settimeout(120)   # a stalled peer ends this process, not the run
    return c
if role == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); congest(s)
    s.bind((me, 0)); s.listen(64); print(s.getsockname()[1], flush=True)
    conns = [tune(s.accept()[0]) for _ in range(int(peers[0]))]
else:
    conns = []
    for a in peers:
        c = socket.socket(); congest(c)
        c.connect((a.split(":")[0], int(a.split(":")[1]))); conns.append(tune(c))
print("ready", flush=True)
chunk = memoryview(bytearray(4 << 20))
def send(c):
    left = nbytes
    while left:
        n = min(left, len(chunk)); c.sendall(chunk[:n]); left -= n
def receive(c, done):
    buf = bytearray(1 << 20); left = nbytes
    while left:
        n = c.recv_into(buf, min(left, len(buf)))
        if n == 0: raise SystemExit("exchange: a peer closed early")
        left -= n
    done.append(time.monotonic())
for line in sys.stdin:
    if not line.startswith("go "): break
    at = float(line.split()[1]); time.sleep(max(0.0, at - time.monotonic()))
    done = []
    ts = [threading.Thread(target=f, args=a) for c in conns for f, a in ((send, (c,)), (receive, (c, done)))]
    [t.start() for t in ts]; [t.join() for t in ts]
    print(max(done), flush=True)
"""


def measure_exchange(hosts, workers, servers, nbytes, rounds=3, congestion=None, link_bits=0):
    """Seconds per round for the exchange pattern (_EXCHANGE) between hosts named in `workers` and
    `servers`, each pair moving `nbytes` each way; the list of `rounds` timings. `congestion`: the
    connections' TCP congestion control (None: the host's default); `link_bits`: when set, every sender
    paces each connection at its equal share of a link of that many bits per second (a worker's share
    among the servers, a server's among the workers), as troupe node --link-mbit does. A worker and a
    server on the same host (a name in both lists) exchange nothing: their bytes would not cross the
    host's link (Troupe's nodes talk through a Unix socket there); a round with no pair at all takes 0 s."""
    procs, addresses = [], {}
    tcp = congestion or "-"

    def pace(peers):
        return str(int(link_bits / 8 / peers)) if link_bits else "0"
    for s in servers:
        remote = [w for w in workers if w != s]
        if not remote:
            continue
        p = hosts.start(s, [sys.executable, "-c", _EXCHANGE, "server", hosts.addr[s], str(nbytes), tcp,
                            pace(len(workers)), str(len(remote))],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        port = p.stdout.readline().strip()
        if not port:
            raise RuntimeError(f"exchange: server {s} did not start")
        procs.append(p)
        addresses[s] = f"{hosts.addr[s]}:{port}"
    for w in workers:
        remote = [addresses[s] for s in servers if s != w]
        if not remote:
            continue
        procs.append(hosts.start(w, [sys.executable, "-c", _EXCHANGE, "worker", hosts.addr[w], str(nbytes), tcp,
                                     pace(len(servers))] + remote,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    if not procs:
        return [0.0] * rounds
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            raise RuntimeError("exchange: a process did not connect")
    timings = []
    for _ in range(rounds):
        at = time.monotonic() + 0.2
        for p in procs:
            p.stdin.write(f"go {at}\n")
            p.stdin.flush()
        lines = [p.stdout.readline().strip() for p in procs]
        if not all(lines):
            raise RuntimeError("exchange: a process ended before its round did (a peer stalled or closed)")
        timings.append(max(float(t) for t in lines) - at)
    for p in procs:
        p.stdin.close()
        p.wait(30)
    return timings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    m = sub.add_parser("measure", help="TCP throughput between two emulated hosts")
    m.add_argument("--link", default="1gbit", help="RATE[,LATENCY], e.g. 1gbit or 10gbit,1ms")
    m.add_argument("--seconds", type=float, default=3.0)
    m.add_argument("--streams", type=int, default=1)
    m.add_argument("--both-ways", action="store_true",
                   help="one connection sending both ways at once (as a channel carries pushes and answers)")
    x = sub.add_parser("exchange", help="one parameter-server step's bytes over raw TCP: the network's own "
                       "step time against the floor of `troupe bench scaling`")
    x.add_argument("--link", default="1gbit", help="RATE[,LATENCY]")
    x.add_argument("--workers", type=int, default=2)
    x.add_argument("--servers", type=int, default=2)
    x.add_argument("--bytes", type=float, required=True, help="model size M in bytes (each worker pushes M "
                   "and pulls M, M/S to and from each server)")
    x.add_argument("--rounds", type=int, default=5)
    x.add_argument("--congestion", default=None, help="the connections' TCP congestion control, e.g. cubic "
                   "(default: the host's)")
    x.add_argument("--pace", action="store_true", help="pace every connection at its sender's equal share of "
                   "the link's rate, as troupe node --link-mbit does")
    x.add_argument("--colocated", action="store_true", help="server i on worker i's host (needs as many "
                   "servers as workers); a host's own pair exchanges nothing, as its bytes would not cross the link")
    sub.add_parser("leftovers", help="namespaces and links of emulated hosts still there (exit 1 if any)")
    args = parser.parse_args()
    need_root()
    if args.what == "leftovers":
        found = leftovers()
        print("\n".join(found) if found else "none")
        raise SystemExit(1 if found else 0)
    try:
        link = parse_link(args.link)
    except ValueError as e:
        raise SystemExit(f"emulated_hosts.py: --link: {e}")
    if args.what == "exchange":
        if args.workers < 1 or args.servers < 1 or args.bytes <= 0 or args.rounds < 1 or not link.rate_bits:
            raise SystemExit("emulated_hosts.py exchange: --workers, --servers, --bytes and --rounds must be "
                             "positive and --link must have a rate")
        if args.colocated and args.servers != args.workers:
            raise SystemExit("emulated_hosts.py exchange: --colocated needs as many --servers as --workers")
        workers = [f"w{i}" for i in range(args.workers)]
        servers = workers if args.colocated else [f"s{i}" for i in range(args.servers)]
        per_pair = int(args.bytes / args.servers)
        with EmulatedHosts(workers + ([] if args.colocated else servers), link) as hosts:
            timings = measure_exchange(hosts, workers, servers, per_pair, args.rounds, args.congestion,
                                       link.rate_bits if args.pace else 0)
        from bench_scaling import floor_seconds  # the floor that `troupe bench scaling` reports
        floor = floor_seconds(args.bytes, link.rate_bits, args.workers, args.servers, args.colocated)
        ms = sorted(t * 1000 for t in timings)
        median = ms[len(ms) // 2]
        print(f"exchange {args.workers} worker(s) x {args.servers} server(s){' colocated' if args.colocated else ''}, "
              f"M = {args.bytes:.0f} bytes, link {link}, TCP {args.congestion or 'host default'}"
              f"{', paced' if args.pace else ''}: "
              f"{', '.join(f'{t:.0f}' for t in ms)} ms (median {median:.0f}); floor {floor * 1000:.0f} ms; "
              f"floor/median {floor * 1000 / median:.3f}")
        return
    with EmulatedHosts(["a", "b"], link) as hosts:
        if args.both_ways:
            there, back = measure_both_ways(hosts, "a", "b", args.seconds)
            print(f"link {link}: {there / 1e6:.0f} Mbit/s from {hosts.addr['a']} to {hosts.addr['b']} and "
                  f"{back / 1e6:.0f} Mbit/s back at once (one TCP connection, {args.seconds:g} s)")
            return
        bits = measure_throughput(hosts, "a", "b", args.seconds, args.streams)
        print(f"link {link}: {bits / 1e6:.0f} Mbit/s from {hosts.addr['a']} to {hosts.addr['b']} "
              f"({args.streams} TCP stream(s), {args.seconds:g} s)")


if __name__ == "__main__":
    main()
