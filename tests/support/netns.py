"""Hosts made of Linux network namespaces, for multi-host tests (tests/e2e/test_scale.py).

A ``Topology`` is a bridge in the root namespace holding ``198.18.N.1/24`` and, per host, a
network namespace joined to the bridge by a veth pair (its end inside is ``eth0`` with
``198.18.N.<octet>/24``). Addresses come only from 198.18.0.0/15, the range reserved for
benchmarks (RFC 2544); the namespaces have no default route, so nothing in them can reach any
address outside their /24. ``N`` is the first /24 of 198.18.0.0/16 that no interface of the
machine uses, so parallel runs do not collide.

Every name carries the creating process's id (namespaces ``mcpscale-<pid>-<host>``, links
``msc<pid hex>...``). ``Topology.close()`` stops whatever still runs in its namespaces (each
process by its id), deletes the namespaces and the bridge; ``reap_stale()`` does the same for
the leftovers of a run whose process is gone (a run killed with SIGKILL cannot clean up).

``inside(host)`` moves the calling *thread* into a host's namespace (setns(2) through libc;
the network namespace is per thread) and back: sockets it opens, threads and processes it
starts from then on belong to that host. ``Topology.root()`` moves it back to the namespace
the topology was made in (where the bridge address lives) for a while, e.g. to start a server
that listens on the bridge address.

Needs root and iproute2 (``ip``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "mcpscale"
LINK_PREFIX = "msc"
BENCHMARK_RANGE = ipaddress.ip_network("198.18.0.0/15")
CLONE_NEWNET = 0x40000000


class NetnsUnavailable(RuntimeError):
    """This machine cannot make network namespaces here (not root, no iproute2, no permission)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def available() -> str:
    """ "" when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("ip") is None:
        return "iproute2 (`ip`) is not installed"
    name = f"{PREFIX}-{os.getpid()}-probe"
    done = _ip("netns", "add", name, check=False)
    if done.returncode != 0:
        return f"`ip netns add` failed: {done.stderr.strip()}"
    _ip("netns", "del", name, check=False)
    return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def netns_pids(name: str) -> list[int]:
    done = _ip("netns", "pids", name, check=False)
    return [int(p) for p in done.stdout.split() if p.isdigit()]


def kill_netns_processes(name: str, timeout: float = 10) -> list[int]:
    """SIGKILL every process in namespace ``name`` (each by its id); returns their ids."""
    killed: list[int] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = netns_pids(name)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        time.sleep(0.1)
    return killed


def reap_stale() -> list[str]:
    """Remove namespaces and links of earlier runs whose creating process no longer exists."""
    removed: list[str] = []
    listed = _ip("netns", "list", check=False).stdout.split("\n")
    for line in listed:
        name = line.split(" ", 1)[0]
        found = re.fullmatch(rf"{PREFIX}-(\d+)-[\w-]+", name)
        if found and not _alive(int(found.group(1))):
            kill_netns_processes(name)
            _ip("netns", "del", name, check=False)
            removed.append(name)
    for line in _ip("-o", "link", "show", check=False).stdout.splitlines():
        found = re.match(rf"\d+: ({LINK_PREFIX}([0-9a-f]+)x\w*)[@:]", line)
        if found and not _alive(int(found.group(2), 16)):
            _ip("link", "del", found.group(1), check=False)
            removed.append(found.group(1))
    return removed


def _used_third_octets() -> set[int]:
    used = set()
    for line in _ip("-o", "-4", "addr", "show", check=False).stdout.splitlines():
        found = re.search(r"inet 198\.18\.(\d+)\.\d+/", line)
        if found:
            used.add(int(found.group(1)))
    return used


@contextlib.contextmanager
def _entered(path: str) -> Iterator[None]:
    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/thread-self/ns/net") as original, open(path) as target:
        if libc.setns(target.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {path} failed")
        try:
            yield
        finally:
            if libc.setns(original.fileno(), CLONE_NEWNET) != 0:  # pragma: no cover - cannot happen as root
                raise OSError(ctypes.get_errno(), "setns back to the original namespace failed")


def inside(host: Host) -> contextlib.AbstractContextManager[None]:
    """Run the calling thread in ``host``'s network namespace, and move it back on exit."""
    return _entered(f"/run/netns/{host.netns}")


@dataclass
class Host:
    name: str
    netns: str
    address: str
    veth: str
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def popen(self, args: Sequence[str], **kwargs: object) -> subprocess.Popen[bytes]:
        """Start ``args`` in this host's namespace, in a session of its own (so its group can be killed)."""
        process: subprocess.Popen[bytes] = subprocess.Popen(  # type: ignore[call-overload]
            ["ip", "netns", "exec", self.netns, *args], start_new_session=True, **kwargs
        )
        self.started.append(process)
        return process

    def run(self, args: Sequence[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        kwargs.setdefault("timeout", 120)
        return subprocess.run(["ip", "netns", "exec", self.netns, *args], **kwargs)  # type: ignore[call-overload,no-any-return]

    def pids(self) -> list[int]:
        return netns_pids(self.netns)

    def kill_all(self) -> list[int]:
        """SIGKILL every process running on this host (the host dies); returns their ids."""
        killed = kill_netns_processes(self.netns)
        for process in self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
        return killed

    def set_link(self, up: bool) -> None:
        """Plug or unplug this host's cable (its eth0)."""
        _ip("-n", self.netns, "link", "set", "eth0", "up" if up else "down")

    def cut_off(self, other: Host, cut: bool = True) -> None:
        """Drop (or stop dropping) every packet this host sends to ``other`` (a blackhole route)."""
        _ip("-n", self.netns, "route", "add" if cut else "del", "blackhole", f"{other.address}/32")

    def routes(self) -> str:
        return _ip("-n", self.netns, "route", "show").stdout


class Topology:
    """A bridge with hosts on it. Use as a context manager: every piece goes away on exit."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.tag = f"{self.pid:x}"
        self.bridge = f"{LINK_PREFIX}{self.tag}x"
        if len(self.bridge) > 12:
            raise RuntimeError(f"process id {self.pid} too large for interface names")
        self.hosts: dict[str, Host] = {}
        self.octet = -1
        self.gateway = ""
        self._made_bridge = False
        self._root_ns = ""

    def __enter__(self) -> Topology:
        try:
            self._root_fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
            self._root_ns = f"/proc/self/fd/{self._root_fd}"
            used = _used_third_octets()
            self.octet = next(n for n in range(256) if n not in used)
            self.network = ipaddress.ip_network(f"198.18.{self.octet}.0/24")
            assert self.network.subnet_of(BENCHMARK_RANGE)  # type: ignore[arg-type]
            self.gateway = f"198.18.{self.octet}.1"
            _ip("link", "add", self.bridge, "type", "bridge")
            self._made_bridge = True
            _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def root(self) -> contextlib.AbstractContextManager[None]:
        """Run the calling thread in the namespace the topology was made in (the bridge's), and
        move it back on exit: what must listen on the bridge address starts there."""
        return _entered(self._root_ns)

    def add_host(self, name: str, last_octet: int) -> Host:
        address = f"198.18.{self.octet}.{last_octet}"
        netns = f"{PREFIX}-{self.pid}-{name}"
        veth = f"{self.bridge}{len(self.hosts)}"
        peer = f"{veth}p"
        host = Host(name, netns, address, veth)
        _ip("netns", "add", netns)
        self.hosts[name] = host
        _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", netns)
        _ip("-n", netns, "link", "set", peer, "name", "eth0")
        _ip("-n", netns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", netns, "link", "set", "eth0", "up")
        _ip("-n", netns, "link", "set", "lo", "up")
        _ip("link", "set", veth, "master", self.bridge, "up")
        routes = host.routes()
        assert "default" not in routes, routes
        return host

    def free_port(self, address: str | None = None) -> int:
        """A free TCP port on ``address`` (default: the bridge address in the root namespace)."""
        with socket.socket() as sock:
            sock.bind((address or self.gateway, 0))
            return int(sock.getsockname()[1])

    def close(self) -> None:
        for host in self.hosts.values():
            for process in host.started:
                if process.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
            kill_netns_processes(host.netns)
            for process in host.started:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)
            _ip("netns", "del", host.netns, check=False)
            _ip("link", "del", host.veth, check=False)  # gone with its peer already, normally
        self.hosts.clear()
        if self._made_bridge:
            _ip("link", "del", self.bridge, check=False)
            self._made_bridge = False
        if self._root_ns:
            os.close(self._root_fd)
            self._root_ns = ""

    def leftovers(self) -> list[str]:
        """Namespaces or links of this topology still present (empty after close())."""
        found = [n for n in _ip("netns", "list").stdout.split() if n.startswith(f"{PREFIX}-{self.pid}-")]
        found += [line for line in _ip("-o", "link", "show").stdout.splitlines() if f" {self.bridge}" in line]
        return found


def reachable(address: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(what: str, check: object, timeout: float, interval: float = 0.1) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = check()  # type: ignore[operator]
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return "<no log>"
