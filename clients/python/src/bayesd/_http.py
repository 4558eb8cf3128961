"""HTTP transport on the standard library: one keep-alive connection per thread, timeouts, retries.

A *logical request* (one method call of the client) is serialised once and sent with one ``Idempotency-Key``; every
retry of it sends the same bytes with the same key, so the server stores its effect once and replays the first
answer (``Idempotent-Replayed: true``) to a retry of a write that had in fact succeeded.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
import uuid
from typing import Any, Callable, Dict, Mapping, Optional, Tuple
from urllib.parse import urlencode, urlsplit

from .errors import APIError, TransportError, error_for

#: Statuses retried (with the same idempotency key): the server was busy or its database unreachable.
RETRY_STATUSES = frozenset({502, 503, 504})
_NETWORK_ERRORS = (OSError, http.client.HTTPException)  # socket.timeout and ConnectionError are OSErrors
# What a request on a keep-alive connection the server has closed meanwhile fails with; retried at once on a new
# connection (once: the new connection is not reused).
_STALE_ERRORS = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


def new_idempotency_key() -> str:
    """A fresh key for one logical request (``py-`` and a random UUID: 39 visible ASCII characters)."""
    return "py-" + str(uuid.uuid4())


class Response:
    """A 2xx answer: status, headers (lower-case names) and body bytes."""

    def __init__(self, status: int, headers: Dict[str, str], body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else None

    def text(self) -> str:
        return self.body.decode("utf-8")


class Transport:
    """Sends requests to one base URL. Thread-safe: each thread keeps its own connection."""

    def __init__(
        self,
        url: str,
        *,
        token: Optional[str],
        timeout: float,
        retries: int,
        backoff: float,
        max_backoff: float,
        user_agent: str,
        sleep: Callable[[float], None] = time.sleep,
    ):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url must be http://host[:port] or https://host[:port], not {url!r}")
        self.base = url.rstrip("/")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.user_agent = user_agent
        self._sleep = sleep
        self._local = threading.local()

    # -- connections ---------------------------------------------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Closes this thread's connection (others close when their threads end)."""
        self._drop_connection()

    # -- requests ------------------------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Optional[Mapping[str, Any]] = None,
        json_body: Any = None,
        idempotency_key: Optional[str] = None,
        accept: str = "application/json",
    ) -> Response:
        """Sends one logical request, retrying network errors and 502/503/504 with the same bytes and key.

        Raises :class:`~bayesd.errors.APIError` (a subclass per status) for an error answer and
        :class:`~bayesd.errors.TransportError` when every attempt failed on the network.
        """
        query = {k: v for k, v in (params or {}).items() if v is not None}
        target = self._prefix + path + ("?" + urlencode(query) if query else "")
        headers = {"Accept": accept, "User-Agent": self.user_agent}
        body: Optional[bytes] = None
        if json_body is not None:
            body = json.dumps(json_body, allow_nan=False, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        url = self.base + path
        attempt = 0
        while True:
            attempt += 1
            reused = getattr(self._local, "conn", None) is not None
            try:
                status, resp_headers, data = self._send(method, target, body, headers)
            except _NETWORK_ERRORS as e:
                self._drop_connection()
                if reused and isinstance(e, _STALE_ERRORS):
                    # The server closed the idle keep-alive connection (its header-read timeout): not an attempt.
                    attempt -= 1
                    continue
                if attempt > self.retries:
                    raise TransportError(
                        f"{method} {url} failed after {attempt} attempt{'s' if attempt > 1 else ''}: {e!r}",
                        method=method,
                        url=url,
                        attempts=attempt,
                    ) from e
                self._sleep(self._delay(attempt, None))
                continue
            if 200 <= status < 300:
                return Response(status, resp_headers, data)
            if status in RETRY_STATUSES and attempt <= self.retries:
                self._sleep(self._delay(attempt, resp_headers.get("retry-after")))
                continue
            raise self._error(status, resp_headers, data, method, url)

    def _send(
        self, method: str, target: str, body: Optional[bytes], headers: Dict[str, str]
    ) -> Tuple[int, Dict[str, str], bytes]:
        conn = self._connection()
        conn.request(method, target, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        resp_headers = {k.lower(): v for k, v in resp.getheaders()}
        if resp_headers.get("connection", "").lower() == "close":
            self._drop_connection()
        return resp.status, resp_headers, data

    def _delay(self, attempt: int, retry_after: Optional[str]) -> float:
        """Retry-After (seconds) when the server gave one, else exponential backoff with full jitter."""
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_backoff)
            except ValueError:
                pass  # an HTTP date: fall back to the backoff
        return random.uniform(0, min(self.max_backoff, self.backoff * 2 ** (attempt - 1)))

    @staticmethod
    def _error(status: int, headers: Dict[str, str], data: bytes, method: str, url: str) -> APIError:
        problem: Dict[str, Any]
        try:
            parsed = json.loads(data.decode("utf-8")) if data else {}
            problem = parsed if isinstance(parsed, dict) else {"detail": str(parsed)}
        except (ValueError, UnicodeDecodeError):
            problem = {"detail": data.decode("utf-8", "replace")[:500]}
        problem.setdefault("status", status)
        problem.setdefault("title", http.client.responses.get(status, "Error"))
        return error_for(status, problem, method=method, url=url, request_id=headers.get("x-request-id"))


__all__ = ["Transport", "Response", "new_idempotency_key", "RETRY_STATUSES"]
