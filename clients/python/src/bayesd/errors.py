"""Errors raised by the client.

Every answer of the server outside 2xx is an RFC 9457 problem document; :class:`APIError` (and its subclass for
the status) carries it: ``status``, ``title``, ``detail``, ``type`` and, for validation problems, ``errors`` with
the name of each invalid field (``parameters[2].low``, ``assignments.temperature``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional


class BayesdError(Exception):
    """Base class of every error this package raises."""


class TransportError(BayesdError):
    """The server could not be reached, or the connection failed, on every attempt.

    ``attempts`` is how many times the request was sent; ``__cause__`` is the last network error.
    """

    def __init__(self, message: str, *, method: str, url: str, attempts: int):
        super().__init__(message)
        self.method = method
        self.url = url
        self.attempts = attempts


@dataclass(frozen=True)
class FieldError:
    """One invalid field of a request: its JSON path and what is wrong with it."""

    field: str
    message: str


class APIError(BayesdError):
    """The server answered with an error status and a problem document."""

    def __init__(
        self,
        status: int,
        problem: Dict[str, Any],
        *,
        method: str,
        url: str,
        request_id: Optional[str] = None,
    ):
        self.status = status
        self.problem = problem
        self.type: str = str(problem.get("type", "about:blank"))
        self.title: str = str(problem.get("title", ""))
        self.detail: str = str(problem.get("detail", ""))
        self.errors: List[FieldError] = [
            FieldError(str(e.get("field", "")), str(e.get("message", "")))
            for e in problem.get("errors") or []
            if isinstance(e, dict)
        ]
        self.method = method
        self.url = url
        self.request_id = request_id
        super().__init__(self._message())

    @property
    def fields(self) -> List[str]:
        """The names of the invalid fields, in the server's order (empty unless the problem names fields)."""
        return [e.field for e in self.errors]

    @property
    def kind(self) -> str:
        """The last segment of the problem type, e.g. ``validation``, ``budget-spent``, ``not-found``."""
        return self.type.rstrip("/").rsplit("/", 1)[-1]

    def _message(self) -> str:
        msg = f"{self.status} {self.title or 'error'}"
        if self.detail:
            msg += f": {self.detail}"
        if self.errors:
            msg += " (" + "; ".join(f"{e.field}: {e.message}" for e in self.errors) + ")"
        msg += f" [{self.method} {self.url}"
        if self.request_id:
            msg += f", request id {self.request_id}"
        return msg + "]"


class BadRequest(APIError):
    """400: the request is malformed (not JSON, a bad header, path or query parameter)."""


class Unauthorized(APIError):
    """401: the server has API tokens and the request had none or a wrong one."""


class NotFound(APIError):
    """404: no such study, suggestion, observation or route."""


class Conflict(APIError):
    """409: the request conflicts with the state of the study (``kind`` says how: ``budget-spent``,
    ``budget-reserved``, ``study-archived``, ``suggestion-completed``, ``no-model``, ``idempotency-key-reused``, …)."""


class PayloadTooLarge(APIError):
    """413: the request body exceeds the server's limit."""


class UnsupportedMediaType(APIError):
    """415: the body was not sent as JSON."""


class ValidationError(APIError):
    """422: fields failed validation; ``errors``/``fields`` name each one."""


class ServiceUnavailable(APIError):
    """503: the server is busy or its database is unreachable, on every attempt."""


_BY_STATUS = {
    400: BadRequest,
    401: Unauthorized,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: ValidationError,
    503: ServiceUnavailable,
}


def error_for(status: int, problem: Dict[str, Any], *, method: str, url: str, request_id: Optional[str]) -> APIError:
    """The :class:`APIError` subclass for a status."""
    cls = _BY_STATUS.get(status, APIError)
    return cls(status, problem, method=method, url=url, request_id=request_id)
