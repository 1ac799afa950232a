"""Real Redis servers for tests: a `redis-server` started on a free port in a temp dir, stoppable and restartable on
the same port (for fault tests), and a Redis Cluster of such servers. No mocks: tests talk to the actual binaries."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ops.redis_client import RedisClient, open_redis


@contextmanager
def frozen(*processes: subprocess.Popen[bytes]) -> Iterator[None]:
    """The processes stopped with SIGSTOP inside the block: a hung server, whose sockets still accept connections
    but never answer (unlike a killed one, which refuses them). SIGCONT on the way out, whatever happened."""
    stopped = []
    try:
        for process in processes:
            os.kill(process.pid, signal.SIGSTOP)
            stopped.append(process)
        yield
    finally:
        for process in stopped:
            os.kill(process.pid, signal.SIGCONT)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_cluster_port(taken: set[int]) -> int:
    """A free port whose cluster bus port (+10000) is free too and not in `taken`."""
    for _ in range(1000):
        port = free_port()
        bus = port + 10_000
        if bus > 65_535 or port in taken or bus in taken:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", bus))
            except OSError:
                continue
        taken.update((port, bus))
        return port
    raise RuntimeError("no free port pair for a cluster node")


@dataclass(frozen=True)
class RedisTarget:
    """A Redis to test against: a single server or a cluster (`url` names one of its nodes)."""

    url: str
    cluster: bool

    def client(self) -> RedisClient:
        """A new client as the gateway builds it (`ops.redis_client.open_redis`)."""
        return open_redis(self.url, cluster=self.cluster, timeout_seconds=5)


class RedisServer:
    def __init__(self, workdir: Path, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (.ci/run installs it)")
        self.binary = binary
        self.workdir = workdir
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
                "--protected-mode",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._wait_ready()

    def _wait_ready(self, deadline_s: float = 10.0) -> None:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)  # readiness polling of a child process
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def freeze(self) -> AbstractContextManager[None]:
        """The running server hung inside the block (see `frozen`)."""
        assert self.process is not None, "the server is not running"
        return frozen(self.process)


class RedisClusterServer:
    """A real Redis Cluster for tests: `masters` primaries with one replica each, every node a `redis-server
    --cluster-enabled yes` on a free loopback port in its own directory, joined by `redis-cli --cluster create`.

    Replicas never fail over on their own (`cluster-replica-no-failover yes`): a loaded test machine must not
    promote a replica behind a test's back and lose unreplicated writes. `failover(port)` runs a manual
    `CLUSTER FAILOVER` on a replica (which waits until the replica has every write of its master) and waits until
    the cluster agrees on the new roles.
    """

    def __init__(self, workdir: Path, masters: int = 3, node_timeout_ms: int = 5000) -> None:
        binary, cli = shutil.which("redis-server"), shutil.which("redis-cli")
        self.node_timeout_ms = node_timeout_ms
        if binary is None or cli is None:
            raise RuntimeError("redis-server and redis-cli are not installed (.ci/run installs them)")
        self.binary, self.cli = binary, cli
        self.workdir = workdir
        taken: set[int] = set()
        self.ports = [free_cluster_port(taken) for _ in range(2 * masters)]
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        """A URL naming one node: the cluster client discovers the others."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def start(self, deadline_s: float = 60.0) -> None:
        deadline = time.monotonic() + deadline_s
        for port in self.ports:
            self._spawn(port)
        for port in self.ports:
            self._wait(lambda port=port: self.command(port, "PING") == "PONG", deadline, "node did not start")
        nodes = [f"127.0.0.1:{p}" for p in self.ports]
        subprocess.run(
            [self.cli, "--cluster", "create", *nodes, "--cluster-replicas", "1", "--cluster-yes"],
            check=True,
            capture_output=True,
            timeout=max(1.0, deadline - time.monotonic()),
        )
        self.wait_healthy(deadline)

    def _spawn(self, port: int) -> None:
        node_dir = self.workdir / str(port)
        node_dir.mkdir(parents=True, exist_ok=True)
        self.processes[port] = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                str(node_dir / "nodes.conf"),
                "--cluster-node-timeout",
                str(self.node_timeout_ms),
                "--cluster-replica-no-failover",
                "yes",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(node_dir),
                "--protected-mode",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def kill(self, port: int) -> None:
        """SIGKILL one node (a crashed primary: its unreplicated writes are gone)."""
        process = self.processes.pop(port)
        process.kill()
        process.wait(timeout=10)

    def revive(self, port: int, deadline_s: float = 60.0) -> None:
        """Start a killed node again on its port and config: it rejoins (a replaced primary as a replica)."""
        deadline = time.monotonic() + deadline_s
        self._spawn(port)
        self._wait(lambda: self.command(port, "PING") == "PONG", deadline, "node did not start")
        self.wait_healthy(deadline)

    def takeover(self, replica_port: int, deadline_s: float = 30.0) -> None:
        """`CLUSTER FAILOVER TAKEOVER` on the replica of a dead primary: it takes the shard without a vote."""
        deadline = time.monotonic() + deadline_s
        answer = self.command(replica_port, "CLUSTER", "FAILOVER", "TAKEOVER")
        if answer != "OK":
            raise RuntimeError(f"CLUSTER FAILOVER TAKEOVER answered {answer!r}")
        self._wait(lambda: self.info(replica_port, "replication").get("role") == "master", deadline, "no takeover")

    def wait_replicated(self, primary: int, deadline_s: float = 10.0) -> None:
        """Until every replica of `primary` has acknowledged all of its writes."""

        def caught_up() -> bool:
            replication = self.info(primary, "replication")
            offset = replication.get("master_repl_offset")
            replicas = [v for k, v in replication.items() if k.startswith("slave") and k[5:].isdigit()]
            return bool(replicas) and all(f"offset={offset}," in r for r in replicas)

        self._wait(caught_up, time.monotonic() + deadline_s, "replicas did not catch up")

    def command(self, port: int, *args: str) -> str:
        """One command through redis-cli on a node; its answer as text ('' if the node does not answer)."""
        done = subprocess.run(
            [self.cli, "-h", "127.0.0.1", "-p", str(port), *args], capture_output=True, text=True, timeout=10
        )
        return done.stdout.strip()

    def info(self, port: int, section: str) -> dict[str, str]:
        text = self.command(port, "INFO", section) if section != "cluster" else self.command(port, "CLUSTER", "INFO")
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)

    def masters(self) -> dict[int, list[int]]:
        """Each primary's port and the ports of its replicas, as the nodes report them now."""
        found: dict[int, list[int]] = {}
        for port in self.ports:
            replication = self.info(port, "replication")
            if replication.get("role") == "master":
                found.setdefault(port, [])
        for port in self.ports:
            replication = self.info(port, "replication")
            if replication.get("role") == "slave":
                found.setdefault(int(replication["master_port"]), []).append(port)
        return found

    def slots_of(self, port: int) -> list[tuple[int, int]]:
        """The slot ranges a primary serves."""
        ranges = []
        for line in self.command(port, "CLUSTER", "NODES").splitlines():
            fields = line.split()
            if "myself" in fields[2]:
                for part in fields[8:]:
                    if not part.startswith("["):
                        low, _, high = part.partition("-")
                        ranges.append((int(low), int(high or low)))
        return ranges

    def wait_healthy(self, deadline: float) -> None:
        """Until every node says `cluster_state:ok`, knows every node, and every replica is linked and caught up."""

        def healthy() -> bool:
            for port in self.ports:
                cluster = self.info(port, "cluster")
                if cluster.get("cluster_state") != "ok" or cluster.get("cluster_known_nodes") != str(len(self.ports)):
                    return False
                replication = self.info(port, "replication")
                if replication.get("role") == "slave" and replication.get("master_link_status") != "up":
                    return False
            masters = self.masters()
            return len(masters) == len(self.ports) // 2 and all(len(r) == 1 for r in masters.values())

        self._wait(healthy, deadline, "cluster did not become healthy")

    def failover(self, replica_port: int, deadline_s: float = 30.0) -> None:
        """`CLUSTER FAILOVER` on a replica: it becomes the primary of its shard, its old primary its replica."""
        deadline = time.monotonic() + deadline_s
        answer = self.command(replica_port, "CLUSTER", "FAILOVER")
        if answer != "OK":
            raise RuntimeError(f"CLUSTER FAILOVER answered {answer!r}")
        self._wait(lambda: self.info(replica_port, "replication").get("role") == "master", deadline, "no failover")
        self.wait_healthy(deadline)

    @staticmethod
    def _wait(check: Callable[[], bool], deadline: float, message: str) -> None:
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.05)  # bounded polling of child processes' state
        raise RuntimeError(message)

    def stop(self) -> None:
        for process in self.processes.values():
            process.kill()
        for process in self.processes.values():
            process.wait(timeout=10)
        self.processes = {}
