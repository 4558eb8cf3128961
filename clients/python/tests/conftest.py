"""Fixtures: a live release server (`target/release/bayesd`, or `$BAYESD_BIN`) on a fresh SQLite file in a temp
directory, on a port the OS picks; the server reports its address in its JSON start-up log line."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[3]


class Server:
    def __init__(self, binary: Path, workdir: Path, args: Optional[List[str]] = None):
        self.db = workdir / "bayesd.db"
        cmd = [str(binary), "serve", "--bind", "127.0.0.1:0", "--database-url", f"sqlite://{self.db}", *(args or [])]
        env = dict(os.environ, BAYESD_LOG_FORMAT="json", RUST_LOG="info,bayesd::access=off")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
        self.log: List[str] = []
        deadline = time.monotonic() + 30
        addr = None
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("fields", {}).get("message") == "bayesd listening":
                addr = ev["fields"]["addr"]
                break
            if time.monotonic() > deadline:
                break
        if addr is None:
            self.proc.kill()
            raise RuntimeError("bayesd did not start:\n" + "".join(self.log))
        self.url = f"http://{addr}"
        # Keep draining stderr so the server never blocks on a full pipe.
        threading.Thread(target=lambda: [self.log.append(x) for x in self.proc.stderr], daemon=True).start()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _binary() -> Path:
    b = Path(os.environ.get("BAYESD_BIN", REPO / "target" / "release" / "bayesd"))
    if not b.is_file():
        pytest.exit(f"no bayesd binary at {b}: run `cargo build --release -p server` or set BAYESD_BIN", returncode=2)
    return b


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(_binary(), tmp_path_factory.mktemp("bayesd"))
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(_binary(), tmp_path_factory.mktemp("bayesd-token"), ["--api-token", "lab-token"])
    yield srv
    srv.stop()


@pytest.fixture
def client(server: Server):
    from bayesd import Client

    with Client(server.url, retries=2, backoff=0.05) as c:
        yield c
