"""Retries never duplicate: a proxy between the client and the live server loses answers and answers 503, and the
server ends up with each observation exactly once."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List, Tuple
from urllib.parse import urlsplit

import pytest

from bayesd import Client, Conflict, ServiceUnavailable, TransportError, float_param


class FlakyProxy:
    """Forwards to the server. For requests whose path ends with `match`, takes the next action of `plan`:
    `drop_before` (close the connection without forwarding), `drop_after` (forward, then close without answering:
    the server stored it, the client never hears), `503_before`, `503_after` (answer 503 with Retry-After: 0),
    `hang` (answer nothing for `hang_secs`). Records (method, path, Idempotency-Key) of every request."""

    def __init__(self, upstream: str, match: str, plan: List[str], hang_secs: float = 2.0):
        self.seen: List[Tuple[str, str, str]] = []
        up = urlsplit(upstream)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                proxy.seen.append((self.command, self.path, self.headers.get("Idempotency-Key", "")))
                action = proxy.plan.pop(0) if self.path.split("?")[0].endswith(match) and proxy.plan else "pass"
                if action == "drop_before":
                    self.close_connection = True
                    return
                if action == "503_before":
                    return self._send(503, {"Retry-After": "0", "Content-Type": "application/problem+json"},
                                      b'{"type":"about:blank","title":"Busy","status":503,"detail":"proxy"}')
                if action == "hang":
                    time.sleep(hang_secs)
                    self.close_connection = True
                    return
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body, headers=headers)
                res = conn.getresponse()
                data = res.read()
                conn.close()
                if action == "drop_after":
                    self.close_connection = True
                    return
                if action == "503_after":
                    return self._send(503, {"Retry-After": "0"}, b"")
                hdrs = {k: v for k, v in res.getheaders() if k.lower() not in ("transfer-encoding", "connection",
                                                                                  "content-length")}
                self._send(res.status, hdrs, data)

            def _send(self, status, headers, data):
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _handle

        self.plan = list(plan)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def keys(self, suffix: str) -> List[str]:
        return [k for m, p, k in self.seen if m == "POST" and p.split("?")[0].endswith(suffix)]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def study(server):
    return Client(server.url).create_study("retries", [float_param("x", 0, 1)], seed=5)


@pytest.mark.parametrize("plan", [["drop_after"], ["503_after"], ["drop_after", "503_after", "drop_before"]])
def test_a_lost_answer_is_retried_with_the_same_key_and_stored_once(server, study, plan):
    s = study.suggest()
    proxy = FlakyProxy(server.url, "/observations", plan)
    try:
        via_proxy = Client(proxy.url, retries=5, backoff=0.01).study(study.id)
        obs = via_proxy.observe(s, 0.42, metadata={"plan": "-".join(plan)})
    finally:
        proxy.close()
    keys = proxy.keys("/observations")
    assert len(keys) == len(plan) + 1, proxy.seen  # every failed attempt was retried, then one succeeded
    assert len(set(keys)) == 1 and keys[0].startswith("py-")
    stored = study.observations()
    assert [o.id for o in stored] == [obs.id]  # exactly once, and the answer the client got is the stored one
    assert stored[0].value == 0.42


def test_503_before_the_server_is_retried_and_each_call_has_its_own_key(server, study):
    proxy = FlakyProxy(server.url, "/suggestions", ["503_before", "drop_before"])
    try:
        via_proxy = Client(proxy.url, retries=3, backoff=0.01).study(study.id)
        s1 = via_proxy.suggest()
        s2 = via_proxy.suggest()
        via_proxy.observe(s1, 0.1)
        via_proxy.observe(s2, 0.2)
    finally:
        proxy.close()
    suggest_keys = proxy.keys("/suggestions")
    assert len(suggest_keys) == 4 and suggest_keys[0] == suggest_keys[1] == suggest_keys[2] != suggest_keys[3]
    observe_keys = proxy.keys("/observations")
    assert len(observe_keys) == 2 and observe_keys[0] != observe_keys[1]
    assert len(study.suggestions()) == 2 and len(study.observations()) == 2


def test_the_same_key_twice_replays_and_another_body_is_refused(study):
    s = study.suggest()
    first = study.observe(s, 0.3, idempotency_key="lab-run-17")
    again = study.observe(s, 0.3, idempotency_key="lab-run-17")
    assert again.id == first.id
    assert len(study.observations()) == 1
    with pytest.raises(Conflict) as e:
        study.observe(s, 0.9, idempotency_key="lab-run-17")
    assert e.value.kind == "idempotency-key-reused"


def test_retries_give_up_with_typed_errors(server, study):
    proxy = FlakyProxy(server.url, "/best", ["503_before"] * 3)
    try:
        with pytest.raises(ServiceUnavailable) as e:
            Client(proxy.url, retries=2, backoff=0.01).study(study.id).best()
        assert e.value.status == 503 and e.value.detail == "proxy"
    finally:
        proxy.close()
    assert len([1 for m, p, _ in proxy.seen if p.endswith("/best")]) == 3

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(TransportError) as e:
        Client(f"http://127.0.0.1:{port}", retries=2, backoff=0.01).health()
    assert e.value.attempts == 3 and isinstance(e.value.__cause__, ConnectionRefusedError)


def test_timeouts_are_per_attempt_and_retried(server, study):
    proxy = FlakyProxy(server.url, "/best", ["hang"], hang_secs=1.5)
    try:
        t0 = time.monotonic()
        best = Client(proxy.url, timeout=0.3, retries=1, backoff=0.01).study(study.id).best()
        assert time.monotonic() - t0 < 1.4  # the hung attempt was cut at the timeout, the retry answered
        assert best.value is None
        with pytest.raises(TransportError) as e:
            proxy.plan = ["hang"]
            Client(proxy.url, timeout=0.3, retries=0).study(study.id).best()
        assert e.value.attempts == 1 and isinstance(e.value.__cause__, (socket.timeout, TimeoutError))
    finally:
        proxy.close()


def test_a_keep_alive_connection_the_server_closed_is_reopened_without_using_a_retry(tmp_path):
    from conftest import Server, _binary

    srv = Server(_binary(), tmp_path, ["--header-read-timeout-secs", "1"])
    try:
        client = Client(srv.url, retries=0)  # no retries: only the free reconnect can save the second call
        study = client.create_study("idle", [float_param("x", 0, 1)])
        time.sleep(2.5)  # the server drops the idle keep-alive connection after 1 s
        s = study.suggest()
        study.observe(s, 0.5)
        assert [o.value for o in study.observations()] == [0.5]
    finally:
        srv.stop()
