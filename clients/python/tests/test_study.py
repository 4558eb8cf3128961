"""A full study and the error paths, against the live server of the `server` fixture."""

from __future__ import annotations

import csv
import io
import math
import uuid

import pytest

from bayesd import (
    Client,
    Conflict,
    NotFound,
    Unauthorized,
    ValidationError,
    categorical_param,
    float_param,
    int_param,
)

PARAMS = [
    float_param("temperature", 20, 80),
    float_param("catalyst_ppm", 1, 1000, log=True),
    int_param("stir_rpm", 100, 1000),
    categorical_param("solvent", ["water", "ethanol", "dmso"]),
]


def reaction(a):
    bonus = {"water": 0.0, "ethanol": 5.0, "dmso": 2.0}[a["solvent"]]
    return 80 - (a["temperature"] - 55) ** 2 / 20 - (math.log10(a["catalyst_ppm"]) - 2) ** 2 * 3 - abs(
        a["stir_rpm"] - 600
    ) / 100 + bonus


def test_full_study_with_all_four_parameter_types(client: Client):
    study = client.create_study("reaction", PARAMS, objective="yield", goal="maximize", seed=3)
    assert study.status == "active" and study.name == "reaction"
    seen = []

    def record(i, s, obs):
        seen.append((i, s.id, obs.suggestion_id, obs.value))

    best = study.optimize(reaction, 12, client_id="robot-1", callback=record)
    assert [i for i, *_ in seen] == list(range(12))
    assert all(sid == obs_sid for _, sid, obs_sid, _ in seen)
    assert len({sid for _, sid, _, _ in seen}) == 12  # a new suggestion every round
    for _, _, _, v in seen:
        assert v is not None
    # Each suggestion respects the space.
    for s in study.suggestions():
        a = s.assignments
        assert 20 <= a["temperature"] <= 80 and 1 <= a["catalyst_ppm"] <= 1000
        assert isinstance(a["stir_rpm"], int) and 100 <= a["stir_rpm"] <= 1000
        assert a["solvent"] in ("water", "ethanol", "dmso")
        assert s.state == "completed"

    observations = study.observations()
    assert len(observations) == 12
    values = [o.value for o in observations]
    assert best.value == max(values)
    assert best.observation_id in {o.id for o in observations}
    assert best.assignments == next(o.assignments for o in observations if o.id == best.observation_id)
    assert best.recommended is not None and set(best.recommended) == {p["name"] for p in PARAMS}

    preds = study.predict([best.assignments, observations[0].assignments])
    assert len(preds) == 2 and all(p.stddev >= 0 and math.isfinite(p.mean) for p in preds)
    # The GP interpolates its data: the posterior mean at an observed point is near the observed value.
    spread = max(values) - min(values)
    assert abs(preds[0].mean - best.value) < 0.5 * spread

    rows = list(csv.DictReader(io.StringIO(study.observations_csv())))
    assert len(rows) == 12
    for p in PARAMS:
        assert p["name"] in rows[0]
    by_id = {o.id: o for o in observations}
    assert {r["id"] for r in rows} == set(by_id)
    assert {r["id"]: float(r["value"]) for r in rows} == {o.id: o.value for o in observations}
    assert study.observations_rows() == rows

    study.refresh()
    assert study.data["counts"]["observations"] == 12
    assert client.study(study.id).id == study.id
    assert study.id in {s.id for s in client.studies(page_size=1)}  # paging follows next_cursor


def test_suggest_many_costs_failures_metadata_and_manual_runs(client: Client):
    study = client.create_study("batch", [float_param("x", 0, 1), categorical_param("c", ["a", "b"])], seed=1)
    ss = study.suggest(count=3)
    assert isinstance(ss, list) and len(ss) == 3 and len({s.id for s in ss}) == 3
    assert all(s.state == "open" for s in ss)
    o1 = study.observe(ss[0], 0.5, cost=2.5, value_stddev=0.1, metadata={"run": "r1"})
    assert (o1.value, o1.cost, o1.value_stddev, o1.metadata, o1.failed) == (0.5, 2.5, 0.1, {"run": "r1"}, False)
    o2 = study.observe(ss[1].id, failed=True)
    assert o2.failed and o2.value is None and o2.suggestion_id == ss[1].id
    # What actually happened overrides the suggestion.
    o3 = study.observe(ss[2], 0.25, assignments={"x": 0.125})
    assert o3.assignments["x"] == 0.125 and o3.assignments["c"] == ss[2]["c"]
    manual = study.observe(None, 0.75, assignments={"x": 0.9, "c": "b"})
    assert manual.suggestion_id is None
    assert study.suggestion(ss[0]).state == "completed"
    imported = study.observe_many([{"assignments": {"x": i / 10, "c": "a"}, "value": i} for i in range(5)], chunk=2)
    assert [o.value for o in imported] == [0, 1, 2, 3, 4]
    assert len(study.observations(page_size=3)) == 4 + 5
    with pytest.raises(ValueError):
        study.observe(ss[0])  # neither a value nor failed=True: refused before sending


def test_abandon_and_optimize_failure_paths(client: Client):
    study = client.create_study("failures", [float_param("x", 0, 1)], seed=2)
    s = study.suggest()
    assert study.abandon(s).state == "abandoned"

    def boom(a):
        raise RuntimeError("instrument offline")

    with pytest.raises(RuntimeError, match="instrument offline"):
        study.optimize(boom, 3)
    abandoned = study.suggestions("abandoned")
    assert len(abandoned) == 2  # the one above and the one the loop gave back
    assert study.observations() == []

    best = study.optimize(boom, 2, catch=True)
    obs = study.observations()
    assert [o.failed for o in obs] == [True, True]
    assert obs[0].metadata == {"error": "RuntimeError: instrument offline"}
    assert best.value is None

    study.optimize(lambda a: float("nan"), 1)
    assert study.observations()[-1].failed
    study.optimize(lambda a: {"value": a["x"], "cost": 3.0, "metadata": {"k": 1}}, 1)
    last = study.observations()[-1]
    assert (last.value, last.cost, last.metadata, last.failed) == (last.assignments["x"], 3.0, {"k": 1}, False)


def test_budget_stops_the_loop_and_suggest_says_why(client: Client):
    study = client.create_study("budget", [float_param("x", 0, 1)], budget={"max_observations": 3}, seed=4)
    study.optimize(lambda a: a["x"], 10)
    assert len(study.observations()) == 3
    assert study.refresh().status == "completed"
    with pytest.raises(Conflict) as e:
        study.suggest()
    assert e.value.status == 409 and e.value.kind == "budget-spent"


def test_validation_errors_name_the_fields(client: Client):
    with pytest.raises(ValidationError) as e:
        client.create_study("bad", [{"name": "x", "type": "float", "low": 1, "high": 0}])
    err = e.value
    assert err.status == 422 and err.title == "Invalid request"
    assert err.fields and all(f.startswith("parameters[0]") for f in err.fields), err.fields
    assert err.problem["status"] == 422 and err.problem["errors"][0]["field"] == err.fields[0]
    assert err.fields[0] in str(err)

    study = client.create_study("range", [float_param("x", -5, 10)])
    with pytest.raises(ValidationError) as e:
        study.observe(None, 1.0, assignments={"x": 100})
    assert e.value.fields == ["assignments.x"]
    assert "outside" in e.value.errors[0].message
    with pytest.raises(ValidationError) as e:
        study.observe(None, 1.0, assignments={"x": 1, "y": 2})
    assert "assignments.y" in e.value.fields
    with pytest.raises(ValidationError) as e:
        study.predict([])
    assert e.value.fields == ["points"]
    assert study.observations() == []  # nothing stored by refused requests


def test_not_found_and_unauthorized(client: Client, token_server):
    missing = str(uuid.uuid4())
    with pytest.raises(NotFound) as e:
        client.study(missing)
    assert e.value.status == 404 and missing in e.value.detail and e.value.request_id
    with pytest.raises(Unauthorized) as e:
        Client(token_server.url, retries=0).create_study("t", [float_param("x", 0, 1)])
    assert e.value.status == 401
    with pytest.raises(Unauthorized):
        Client(token_server.url, token="wrong", retries=0).study(missing)
    ok = Client(token_server.url, token="lab-token").create_study("t", [float_param("x", 0, 1)])
    assert ok.suggest().assignments.keys() == {"x"}


def test_contexts_given_at_suggest_time_or_at_observe_time(client: Client):
    study = client.create_study(
        "contexts", [float_param("x", 0, 1), float_param("c", 0, 1, role="context")], seed=6
    )
    known = study.suggest(context={"c": 0.3})
    assert known.context == {"c": 0.3}
    obs = study.observe(known, 1.0)  # inherits the context of its suggestion
    assert obs.assignments["c"] == 0.3 and obs.assignments["x"] == known["x"]
    with pytest.raises(ValidationError) as e:
        study.observe(study.suggest(context={"c": 0.2}), 1.0, context={"c": 0.9})
    assert e.value.fields == ["assignments.c"]
    later = study.suggest()  # the environment sets the context; the observation reports it
    assert later.context is None
    obs = study.observe(later, 2.0, context={"c": 0.7})
    assert obs.assignments == {"x": later["x"], "c": 0.7}
