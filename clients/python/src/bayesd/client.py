"""The client: :class:`Client` for the server, :class:`Study` for one study's ask-tell loop."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from ._http import Transport, new_idempotency_key
from .errors import BayesdError, Conflict

__version__ = "0.1.0"

Assignments = Dict[str, Any]
JSON = Dict[str, Any]


@dataclass(frozen=True)
class Prediction:
    """Posterior of the objective at a point, in the study's units and sign."""

    mean: float
    stddev: float


@dataclass(frozen=True)
class Suggestion:
    """A point to evaluate. ``suggestion["x"]`` reads an assignment; ``raw`` is the server's resource."""

    id: str
    assignments: Assignments
    state: str
    context: Optional[Assignments] = None
    control_set: Optional[str] = None
    noise_level: Optional[str] = None
    query: Optional[Assignments] = None
    predicted: Optional[Prediction] = None
    expected_cost: Optional[float] = None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: JSON) -> "Suggestion":
        p = d.get("predicted")
        return cls(
            id=d["id"],
            assignments=dict(d.get("assignments") or {}),
            state=d.get("state", ""),
            context=d.get("context"),
            control_set=d.get("control_set"),
            noise_level=d.get("noise_level"),
            query=d.get("query"),
            predicted=Prediction(p["mean"], p["stddev"]) if p else None,
            expected_cost=d.get("expected_cost"),
            raw=d,
        )

    def __getitem__(self, name: str) -> Any:
        return self.assignments[name]


@dataclass(frozen=True)
class Observation:
    """A stored observation; ``raw`` is the server's resource."""

    id: str
    assignments: Assignments
    value: Optional[float]
    failed: bool
    suggestion_id: Optional[str] = None
    cost: Optional[float] = None
    value_stddev: Optional[float] = None
    metadata: Optional[JSON] = None
    created_at: str = ""
    values: Dict[str, float] = field(default_factory=dict)
    feasible: Optional[bool] = None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: JSON) -> "Observation":
        return cls(
            id=d["id"],
            assignments=dict(d.get("assignments") or {}),
            value=d.get("value"),
            failed=bool(d.get("failed", False)),
            suggestion_id=d.get("suggestion_id"),
            cost=d.get("cost"),
            value_stddev=d.get("value_stddev"),
            metadata=d.get("metadata"),
            created_at=d.get("created_at", ""),
            values=dict(d.get("values") or {}),
            feasible=d.get("feasible"),
            raw=d,
        )


@dataclass(frozen=True)
class Best:
    """``GET …/best``: the best observation so far and the model's recommendation (each ``None`` until known).

    Studies with several objectives have no single best: ``pareto`` lists the observed Pareto front (each point a
    dict with ``observation_id``, ``assignments``, ``values`` and the model's ``predicted`` objectives) and
    ``hypervolume`` the volume it dominates above ``reference_point``."""

    value: Optional[float]
    assignments: Optional[Assignments]
    observation_id: Optional[str]
    recommended: Optional[Assignments]
    recommended_prediction: Optional[Prediction]
    pareto: List[JSON] = field(default_factory=list)
    hypervolume: Optional[float] = None
    reference_point: Dict[str, float] = field(default_factory=dict)
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: JSON) -> "Best":
        bo = d.get("best_observed") or {}
        rec = d.get("recommended") or {}
        p = rec.get("predicted")
        front = d.get("pareto") or {}
        return cls(
            value=bo.get("value"),
            assignments=bo.get("assignments"),
            observation_id=bo.get("observation_id"),
            recommended=rec.get("assignments"),
            recommended_prediction=Prediction(p["mean"], p["stddev"]) if p else None,
            pareto=list(front.get("points") or []),
            hypervolume=front.get("hypervolume"),
            reference_point=dict(front.get("reference_point") or {}),
            raw=d,
        )


SuggestionLike = Union[Suggestion, str, None]


def _suggestion_id(s: SuggestionLike) -> Optional[str]:
    return s.id if isinstance(s, Suggestion) else s


class Client:
    """A bayesd server.

    ``Client("http://127.0.0.1:8080", token=None)``. Every call times out after ``timeout`` seconds per attempt;
    network errors and 502/503/504 answers are retried up to ``retries`` times (503's ``Retry-After`` honoured, else
    exponential backoff from ``backoff`` seconds up to ``max_backoff``). Every write is sent with an
    ``Idempotency-Key`` generated for the call and reused by its retries, so a retry never stores anything twice.
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:8080",
        token: Optional[str] = None,
        *,
        timeout: float = 120.0,
        retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
    ):
        if retries < 0:
            raise ValueError("retries must be >= 0")
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        self._t = Transport(
            url,
            token=token,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            max_backoff=max_backoff,
            user_agent=f"bayesd-python/{__version__}",
        )

    @property
    def url(self) -> str:
        return self._t.base

    def close(self) -> None:
        self._t.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _get(self, path: str, **params: Any) -> Any:
        return self._t.request("GET", path, params=params).json()

    def _write(self, method: str, path: str, body: Any = None, idempotency_key: Optional[str] = None) -> Any:
        key = idempotency_key or new_idempotency_key()
        return self._t.request(method, path, json_body=body, idempotency_key=key).json()

    # -- server --------------------------------------------------------------------------------------------------

    def health(self) -> JSON:
        """``GET /healthz``."""
        return self._get("/healthz")

    def ready(self) -> bool:
        """``GET /readyz``: whether the server and its database are up (``False`` on 503)."""
        try:
            self._t.request("GET", "/readyz")
            return True
        except BayesdError:
            return False

    # -- studies -------------------------------------------------------------------------------------------------

    def create_study(
        self,
        name: str,
        parameters: Sequence[Mapping[str, Any]],
        *,
        objective: Optional[Union[str, Mapping[str, Any]]] = None,
        goal: Optional[str] = None,
        objectives: Optional[Sequence[Mapping[str, Any]]] = None,
        constraints: Optional[Sequence[Mapping[str, Any]]] = None,
        parameter_constraints: Optional[Sequence[Mapping[str, Any]]] = None,
        algorithm: Optional[Union[str, Mapping[str, Any]]] = None,
        budget: Optional[Mapping[str, Any]] = None,
        seed: Optional[int] = None,
        suggestion_ttl: Optional[int] = None,
        idempotency_key: Optional[str] = None,
        **spec: Any,
    ) -> "Study":
        """``POST /v1/studies``. ``parameters`` as the API writes them, e.g. ``{"name": "x", "type": "float",
        "low": 0, "high": 1}`` (see also :func:`bayesd.float_param` and friends). ``objective`` is a name or
        ``{"name", "goal"}``; ``goal`` (``"maximize"``, the server's default, or ``"minimize"``) sets its goal;
        ``algorithm`` a name or ``{"name", "options"}``. ``objectives`` instead of ``objective`` for several
        (``[{"name": "yield"}, {"name": "cost", "goal": "minimize", "threshold": 10}]``); ``constraints`` on
        measured outcomes (``[{"name": "purity", "op": ">=", "bound": 0.99}]``); ``parameter_constraints`` linear in
        the parameters (``[{"terms": {"a": 1, "b": 1}, "op": "<=", "bound": 1}]``, ``op`` also ``==``). Further
        keyword arguments (structural blocks such as ``control_sets``) are sent as they are."""
        body: JSON = {"name": name, "parameters": [dict(p) for p in parameters]}
        if objective is not None or goal is not None:
            obj: JSON = {"name": objective} if isinstance(objective, str) else dict(objective or {})
            if goal is not None:
                obj["goal"] = goal
            obj.setdefault("name", "value")
            body["objective"] = obj
        for k, blocks in (
            ("objectives", objectives),
            ("constraints", constraints),
            ("parameter_constraints", parameter_constraints),
        ):
            if blocks is not None:
                body[k] = [dict(b) for b in blocks]
        if algorithm is not None:
            body["algorithm"] = {"name": algorithm} if isinstance(algorithm, str) else dict(algorithm)
        for k, v in (("budget", budget), ("seed", seed), ("suggestion_ttl", suggestion_ttl)):
            if v is not None:
                body[k] = v
        body.update(spec)
        return Study(self, self._write("POST", "/v1/studies", body, idempotency_key))

    def study(self, study_id: str) -> "Study":
        """The study with this id (``GET /v1/studies/{id}``; :class:`~bayesd.errors.NotFound` when unknown)."""
        return Study(self, self._get(f"/v1/studies/{study_id}"))

    def studies(self, *, page_size: int = 100) -> Iterator["Study"]:
        """Every study, in creation order (follows the pages)."""
        after: Optional[str] = None
        while True:
            page = self._get("/v1/studies", limit=page_size, after=after)
            for s in page["studies"]:
                yield Study(self, s)
            after = page.get("next_cursor")
            if not after:
                return


class Study:
    """One study: the ask-tell loop and its reports. ``data`` is the study resource as last fetched."""

    def __init__(self, client: Client, data: JSON):
        self.client = client
        self.data = data
        self.id: str = data["id"]

    def __repr__(self) -> str:
        return f"Study(id={self.id!r}, name={self.data.get('name')!r}, status={self.data.get('status')!r})"

    @property
    def name(self) -> str:
        return self.data.get("name", "")

    @property
    def status(self) -> str:
        """``active``, ``completed`` (budget spent) or ``archived``, as last fetched (see :meth:`refresh`)."""
        return self.data.get("status", "")

    @property
    def _path(self) -> str:
        return f"/v1/studies/{self.id}"

    def refresh(self) -> "Study":
        """Fetches the study again (status, counts, budget remaining)."""
        self.data = self.client._get(self._path)
        return self

    def archive(self) -> "Study":
        """``DELETE /v1/studies/{id}``: archives the study (no more writes)."""
        self.data = self.client._t.request("DELETE", self._path).json()
        return self

    # -- ask -----------------------------------------------------------------------------------------------------

    def suggest(
        self,
        count: Optional[int] = None,
        *,
        client_id: Optional[str] = None,
        context: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Any:
        """``POST …/suggestions``. Without ``count``: one :class:`Suggestion`. With ``count``: a list of up to
        ``count`` suggestions (fewer when the budget has fewer observations left). ``context``: the values of the
        study's context parameters, when known before the run. Raises :class:`~bayesd.errors.Conflict` with
        ``kind == "budget-spent"`` once the budget is spent."""
        body: JSON = {"count": 1 if count is None else count}
        if client_id is not None:
            body["client_id"] = client_id
        if context is not None:
            body["context"] = dict(context)
        out = self.client._write("POST", f"{self._path}/suggestions", body, idempotency_key)
        suggestions = [Suggestion.from_json(s) for s in out["suggestions"]]
        if count is not None:
            return suggestions
        if not suggestions:
            raise BayesdError(f"study {self.id} returned no suggestion")
        return suggestions[0]

    def suggestion(self, suggestion: SuggestionLike) -> Suggestion:
        """``GET …/suggestions/{id}``."""
        return Suggestion.from_json(self.client._get(f"{self._path}/suggestions/{_suggestion_id(suggestion)}"))

    def suggestions(self, state: Optional[str] = None, *, page_size: int = 1000) -> List[Suggestion]:
        """Every suggestion (optionally only those in ``state``: ``open``, ``completed``, ``abandoned``)."""
        return [Suggestion.from_json(s) for s in self._pages("suggestions", page_size, state=state)]

    def abandon(self, suggestion: SuggestionLike) -> Suggestion:
        """``DELETE …/suggestions/{id}``: gives an open suggestion back (its budget reservation is released)."""
        path = f"{self._path}/suggestions/{_suggestion_id(suggestion)}"
        return Suggestion.from_json(self.client._t.request("DELETE", path).json())

    # -- tell ----------------------------------------------------------------------------------------------------

    @staticmethod
    def _observation_body(
        suggestion: SuggestionLike,
        value: Optional[float],
        *,
        assignments: Optional[Mapping[str, Any]],
        context: Optional[Mapping[str, Any]],
        cost: Optional[float],
        value_stddev: Optional[float],
        failed: bool,
        metadata: Optional[Mapping[str, Any]],
        extra: Mapping[str, Any],
        values: Optional[Mapping[str, float]] = None,
        values_stddev: Optional[Mapping[str, float]] = None,
    ) -> JSON:
        body: JSON = {}
        sid = _suggestion_id(suggestion)
        if sid is not None:
            body["suggestion_id"] = sid
        if assignments is not None or context is not None:
            body["assignments"] = {**dict(assignments or {}), **dict(context or {})}
        if failed:
            body["failed"] = True
        if value is not None:
            body["value"] = float(value)
        elif not failed and not values:
            raise ValueError("observe needs a value (or values) unless failed=True")
        if values:
            body["values"] = {k: float(v) for k, v in values.items()}
        if values_stddev:
            body["values_stddev"] = {k: float(v) for k, v in values_stddev.items()}
        for k, v in (("cost", cost), ("value_stddev", value_stddev)):
            if v is not None:
                body[k] = float(v)
        if metadata is not None:
            body["metadata"] = dict(metadata)
        body.update(extra)
        return body

    def observe(
        self,
        suggestion: SuggestionLike,
        value: Optional[float] = None,
        *,
        assignments: Optional[Mapping[str, Any]] = None,
        context: Optional[Mapping[str, Any]] = None,
        cost: Optional[float] = None,
        value_stddev: Optional[float] = None,
        failed: bool = False,
        metadata: Optional[Mapping[str, Any]] = None,
        values: Optional[Mapping[str, float]] = None,
        values_stddev: Optional[Mapping[str, float]] = None,
        idempotency_key: Optional[str] = None,
        **extra: Any,
    ) -> Observation:
        """``POST …/observations``: the outcome of a run. ``suggestion`` is a :class:`Suggestion`, its id, or
        ``None`` for a run the server did not suggest (then give every parameter in ``assignments``).
        ``assignments`` override the suggestion's (what actually happened); ``context`` gives the context
        parameters' values when the environment set them; ``failed=True`` records a failed run (no value);
        ``values`` gives each objective and outcome constraint by name (studies with ``objectives`` or
        ``constraints``), ``values_stddev`` known standard deviations of some; ``cost``, ``value_stddev`` and
        ``metadata`` as the API defines them. Retried with one key: stored once."""
        body = self._observation_body(
            suggestion,
            value,
            assignments=assignments,
            context=context,
            cost=cost,
            value_stddev=value_stddev,
            failed=failed,
            metadata=metadata,
            extra=extra,
            values=values,
            values_stddev=values_stddev,
        )
        return Observation.from_json(self.client._write("POST", f"{self._path}/observations", body, idempotency_key))

    def observe_many(self, observations: Sequence[Mapping[str, Any]], *, chunk: int = 1000) -> List[Observation]:
        """``POST …/observations/batch``: imports observations written as the API writes them (``{"assignments":
        …, "value": …}``), ``chunk`` (at most 1000) per request; each request is stored all or none."""
        if not 1 <= chunk <= 1000:
            raise ValueError("chunk must be 1..1000")
        out: List[Observation] = []
        for i in range(0, len(observations), chunk):
            part = [dict(o) for o in observations[i : i + chunk]]
            res = self.client._write("POST", f"{self._path}/observations/batch", {"observations": part})
            out.extend(Observation.from_json(o) for o in res["observations"])
        return out

    # -- reports -------------------------------------------------------------------------------------------------

    def best(self) -> Best:
        """``GET …/best``."""
        return Best.from_json(self.client._get(f"{self._path}/best"))

    def predict(self, points: Sequence[Mapping[str, Any]]) -> List[Prediction]:
        """``POST …/predict``: the posterior at each point (complete assignments), in order (of the first
        objective in a study with several; see :meth:`predict_outcomes`)."""
        body = {"points": [dict(p) for p in points]}
        out = self.client._write("POST", f"{self._path}/predict", body)
        return [Prediction(p["mean"], p["stddev"]) for p in out["predictions"]]

    def predict_outcomes(self, points: Sequence[Mapping[str, Any]]) -> List[Dict[str, Prediction]]:
        """``POST …/predict`` in a study with several objectives or outcome constraints: the posterior of each
        of them by name at each point."""
        body = {"points": [dict(p) for p in points]}
        out = self.client._write("POST", f"{self._path}/predict", body)
        return [{k: Prediction(p["mean"], p["stddev"]) for k, p in row.items()} for row in out.get("outcomes") or []]

    def _outcome_names(self) -> List[str]:
        """The names of the study's objectives (with ``objectives``) and outcome constraints."""
        listed = [o["name"] for o in self.data.get("objectives") or []]
        return listed + [c["name"] for c in self.data.get("constraints") or []]

    def observation(self, observation_id: str) -> Observation:
        """``GET …/observations/{id}``."""
        return Observation.from_json(self.client._get(f"{self._path}/observations/{observation_id}"))

    def observations(self, *, page_size: int = 1000) -> List[Observation]:
        """Every observation, in order (follows the pages)."""
        return [Observation.from_json(o) for o in self._pages("observations", page_size)]

    def observations_csv(self) -> str:
        """Every observation as the server's CSV export (one column per parameter)."""
        res = self.client._t.request("GET", f"{self._path}/observations", params={"format": "csv"}, accept="text/csv")
        return res.text()

    def observations_rows(self) -> List[Dict[str, str]]:
        """The CSV export parsed into one dict per row (values as strings, as in the file)."""
        return list(csv.DictReader(io.StringIO(self.observations_csv())))

    def save_csv(self, path: str) -> None:
        """Writes the CSV export to ``path``."""
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(self.observations_csv())

    def _pages(self, what: str, page_size: int, **params: Any) -> Iterator[JSON]:
        after: Optional[str] = None
        while True:
            page = self.client._get(f"{self._path}/{what}", limit=page_size, after=after, **params)
            yield from page[what]
            after = page.get("next_cursor")
            if not after:
                return

    # -- the loop ------------------------------------------------------------------------------------------------

    def optimize(
        self,
        fn: Callable[[Assignments], Any],
        n: int,
        *,
        client_id: Optional[str] = None,
        catch: bool = False,
        callback: Optional[Callable[[int, Suggestion, Observation], None]] = None,
    ) -> Best:
        """Runs ``n`` rounds of suggest → ``fn(assignments)`` → observe, then returns :meth:`best`.

        ``fn`` returns the value, or a dict with ``value`` and optionally ``cost``, ``value_stddev``,
        ``metadata``. In a study with several objectives or outcome constraints it returns a dict of them by name
        (``{"yield": 0.8, "cost": 12}``, optionally with ``cost`` and ``metadata``), or a dict with ``values``;
        a non-finite one makes the run failed. When ``fn`` raises, the run is recorded as failed (``metadata.error`` holds the exception)
        if ``catch`` is true; otherwise the suggestion is abandoned and the exception propagates. A non-finite
        value is recorded as a failed run. Stops early when the study's budget is spent. ``callback(i, suggestion,
        observation)`` is called after each round."""
        for i in range(n):
            try:
                s = self.suggest(client_id=client_id)
            except Conflict as e:
                if e.kind in ("budget-spent", "budget-reserved"):
                    break
                raise
            try:
                result = fn(dict(s.assignments))
            except Exception as e:
                if not catch:
                    try:
                        self.abandon(s)
                    except BayesdError:
                        pass  # the run's own exception matters more; an open suggestion expires or is re-used
                    raise
                obs = self.observe(s, failed=True, metadata={"error": f"{type(e).__name__}: {e}"})
            else:
                kw: Dict[str, Any] = dict(result) if isinstance(result, Mapping) else {"value": result}
                names = self._outcome_names()
                if names and "values" not in kw:
                    kw["values"] = {k: kw.pop(k) for k in list(kw) if k in names}
                value = kw.pop("value", None)
                values = dict(kw.pop("values", None) or {})
                numbers = list(values.values()) + ([] if value is None else [value])
                if numbers and all(math.isfinite(float(v)) for v in numbers):
                    obs = self.observe(s, None if value is None else float(value), values=values or None, **kw)
                else:
                    meta = dict(kw.pop("metadata", None) or {})
                    what = f"non-finite values {values!r}" if values else f"non-finite value {value!r}"
                    meta.setdefault("error", what)
                    obs = self.observe(s, failed=True, metadata=meta, **kw)
            if callback is not None:
                callback(i, s, obs)
        return self.best()


def float_param(name: str, low: float, high: float, *, log: bool = False, **extra: Any) -> JSON:
    """A ``float`` parameter (``log=True``: log scale, ``low`` > 0)."""
    p: JSON = {"name": name, "type": "float", "low": low, "high": high, **extra}
    if log:
        p["scale"] = "log"
    return p


def int_param(name: str, low: int, high: int, *, log: bool = False, **extra: Any) -> JSON:
    """An ``int`` parameter (``log=True``: log scale, ``low`` > 0)."""
    p: JSON = {"name": name, "type": "int", "low": low, "high": high, **extra}
    if log:
        p["scale"] = "log"
    return p


def categorical_param(name: str, choices: Sequence[str], **extra: Any) -> JSON:
    """A ``categorical`` parameter."""
    return {"name": name, "type": "categorical", "choices": list(choices), **extra}
