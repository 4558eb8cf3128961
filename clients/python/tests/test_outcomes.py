"""Several objectives, an outcome constraint and a linear parameter constraint through the client: ``optimize``
with a function returning a dict, the Pareto front from ``best``, ``predict_outcomes``, and the CSV export's
outcome columns; against the live server of the `server` fixture."""

from __future__ import annotations

import csv
import io
import math

import pytest

from bayesd import Client, ValidationError, float_param

PARAMS = [float_param("a", 0, 1), float_param("b", 0, 1), float_param("t", 20, 80)]


def experiment(p):
    tt = (p["t"] - 20) / 60
    return {
        "yield": p["a"] + 0.5 * p["b"] + 0.3 * tt - 0.2 * (p["a"] - 0.6) ** 2,
        "cost": 2 + 5 * p["a"] + 3 * p["b"] ** 2,
        "purity": 1 - 0.2 * tt**2 - 0.05 * p["b"],
    }


def test_two_objectives_with_constraints_through_optimize(client: Client):
    study = client.create_study(
        "formulation",
        PARAMS,
        objectives=[{"name": "yield"}, {"name": "cost", "goal": "minimize", "threshold": 10}],
        constraints=[{"name": "purity", "op": ">=", "bound": 0.9}],
        parameter_constraints=[{"terms": {"a": 1, "b": 1}, "op": "<=", "bound": 1}],
        budget={"max_observations": 20},
        seed=2,
    )
    assert study.data["algorithm_in_use"] == "gp-ehvi"
    seen = []
    best = study.optimize(experiment, 40, callback=lambda i, s, o: seen.append((s, o)))
    assert len(seen) == 20  # the budget stops the loop
    for s, o in seen:
        assert s["a"] + s["b"] <= 1
        assert set(o.values) == {"yield", "cost", "purity"}
        assert o.feasible == (o.values["purity"] >= 0.9)
    assert best.value is None and best.pareto and best.hypervolume > 0
    assert best.reference_point["cost"] == 10
    feasible = [o for _, o in seen if o.feasible]
    for p in best.pareto:
        y, c = p["values"]["yield"], p["values"]["cost"]
        assert not any(o.values["yield"] >= y and o.values["cost"] <= c and (o.values["yield"], o.values["cost"]) != (y, c) for o in feasible)
    pred = study.predict_outcomes([{"a": 0.3, "b": 0.3, "t": 40}])
    assert set(pred[0]) == {"yield", "cost", "purity"}
    assert math.isfinite(pred[0]["cost"].mean) and pred[0]["cost"].stddev >= 0
    rows = list(csv.DictReader(io.StringIO(study.observations_csv())))
    assert len(rows) == 20 and float(rows[0]["values.cost"]) == seen[0][1].values["cost"]


def test_a_non_finite_outcome_is_a_failed_run_and_missing_values_are_named(client: Client):
    study = client.create_study(
        "failing", PARAMS, objective="yield", constraints=[{"name": "purity", "op": ">=", "bound": 0.9}], seed=1
    )
    obs = []
    study.optimize(lambda p: {"value": 1.0, "purity": float("nan")}, 1, callback=lambda i, s, o: obs.append(o))
    assert obs[0].failed and "non-finite" in obs[0].metadata["error"]
    s = study.suggest()
    with pytest.raises(ValidationError) as e:
        study.observe(s, 1.0)
    assert e.value.fields == ["values.purity"]
    o = study.observe(s, 1.0, values={"purity": 0.95})
    assert o.feasible is True and o.values == {"purity": 0.95}
