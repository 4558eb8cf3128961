#!/usr/bin/env python3
"""Drives a full study through a client that openapi-python-client generated from openapi/openapi.json.

Usage: generated_client_study.py --package-dir DIR --package NAME --url http://127.0.0.1:PORT [--token TOKEN]
(DIR holds the generated package NAME; `.ci/run` generates it with `--fail-on-warning` into a temp dir.)

Creates a study with all four parameter types (float, log-scaled float, int, categorical), runs 20 rounds of
suggest/observe (every write with a fresh Idempotency-Key), then best, predict, and the observations as JSON and as
CSV. Every answer is checked: status, typed model (not a Problem), and consistency with what was sent. Exits
non-zero with a message on the first failure.

The generated code parses only the first content type of a response, so `list_observations` with `format=csv`
cannot be parsed by its `sync_detailed` (it calls `response.json()`); the CSV request is built by the generated
`_get_kwargs` and sent through the generated client's own httpx client.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import io
import math
import sys
import uuid

import httpx


def fail(msg: str) -> None:
    print(f"generated client study: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond: bool, msg: str) -> None:
    if not cond:
        fail(msg)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--package-dir", required=True)
    ap.add_argument("--package", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--token", default=None, help="an API token of the server (AuthenticatedClient)")
    args = ap.parse_args()
    sys.path.insert(0, args.package_dir)
    pkg = args.package

    def mod(name: str):
        return importlib.import_module(f"{pkg}.{name}")

    top = importlib.import_module(pkg)
    m = mod("models")
    create_study = mod("api.studies.create_study")
    get_study = mod("api.studies.get_study")
    create_suggestions = mod("api.suggestions.create_suggestions")
    create_observation = mod("api.observations.create_observation")
    list_observations = mod("api.observations.list_observations")
    best_api = mod("api.model.best")
    predict_api = mod("api.model.predict")

    timeout = httpx.Timeout(120.0)  # the generated default (5 s) is short for a suggest on a loaded CI machine
    if args.token:
        client = top.AuthenticatedClient(
            base_url=args.url, token=args.token, raise_on_unexpected_status=True, timeout=timeout
        )
    else:
        client = top.Client(base_url=args.url, raise_on_unexpected_status=True, timeout=timeout)

    def ok(res, status: int, model, what: str):
        check(res.status_code == status, f"{what}: status {int(res.status_code)}, not {status}: {res.content[:500]!r}")
        check(isinstance(res.parsed, model), f"{what}: parsed as {type(res.parsed).__name__}, not {model.__name__}")
        return res.parsed

    params = [
        m.ParameterSpec(name="temperature", type_=m.ParameterType.FLOAT, low=20.0, high=80.0),
        m.ParameterSpec(name="catalyst_ppm", type_=m.ParameterType.FLOAT, low=1.0, high=1000.0, scale=m.Scale.LOG),
        m.ParameterSpec(name="stir_rpm", type_=m.ParameterType.INT, low=100.0, high=1000.0),
        m.ParameterSpec(name="solvent", type_=m.ParameterType.CATEGORICAL, choices=["water", "ethanol", "dmso"]),
    ]
    body = m.CreateStudy(
        name="generated-client",
        parameters=params,
        objective=m.Objective(name="yield", goal=m.Goal.MAXIMIZE),
        seed=11,
    )
    study = ok(
        create_study.sync_detailed(client=client, body=body, idempotency_key=str(uuid.uuid4())),
        201,
        m.StudyResource,
        "create_study",
    )
    sid = study.id
    check(study.status == m.StudyStatus.ACTIVE, f"new study status {study.status}")
    check([p.name for p in study.parameters] == [p.name for p in params], "parameters not echoed in order")

    def yield_of(a: dict) -> float:
        bonus = {"water": 0.0, "ethanol": 4.0, "dmso": 1.5}[a["solvent"]]
        return (
            70
            - (a["temperature"] - 57) ** 2 / 25
            - 2 * (math.log10(a["catalyst_ppm"]) - 1.5) ** 2
            - abs(a["stir_rpm"] - 450) / 150
            + bonus
        )

    told = {}
    for i in range(args.rounds):
        # Alternate: no body (the defaults, one suggestion) and an explicit CreateSuggestions body.
        kw = {} if i % 2 == 0 else {"body": m.CreateSuggestions(count=1, client_id="generated")}
        page = ok(
            create_suggestions.sync_detailed(sid, client=client, idempotency_key=str(uuid.uuid4()), **kw),
            201,
            m.SuggestionList,
            f"create_suggestions round {i + 1}",
        )
        check(len(page.suggestions) == 1, f"round {i + 1}: {len(page.suggestions)} suggestions")
        s = page.suggestions[0]
        a = s.assignments.to_dict()
        check(20 <= a["temperature"] <= 80, f"temperature {a['temperature']}")
        check(1 <= a["catalyst_ppm"] <= 1000, f"catalyst_ppm {a['catalyst_ppm']}")
        check(isinstance(a["stir_rpm"], int) and 100 <= a["stir_rpm"] <= 1000, f"stir_rpm {a['stir_rpm']!r}")
        check(a["solvent"] in ("water", "ethanol", "dmso"), f"solvent {a['solvent']!r}")
        value = yield_of(a)
        obs = ok(
            create_observation.sync_detailed(
                sid,
                client=client,
                body=m.CreateObservation(suggestion_id=s.id, value=value, cost=1.0),
                idempotency_key=str(uuid.uuid4()),
            ),
            201,
            m.ObservationResource,
            f"create_observation round {i + 1}",
        )
        check(obs.suggestion_id == s.id and obs.value == value, f"round {i + 1}: observation does not match")
        told[str(obs.id)] = value

    study = ok(get_study.sync_detailed(sid, client=client), 200, m.StudyResource, "get_study")
    check(study.counts.observations == args.rounds, f"study counts {study.counts.observations} observations")

    best = ok(best_api.sync_detailed(sid, client=client), 200, m.BestResponse, "best")
    check(best.best_observed.value == max(told.values()), f"best {best.best_observed.value} != {max(told.values())}")
    check(str(best.best_observed.observation_id) in told, "best observation id is not one of ours")
    check(best.recommended is not None, "no recommended point after 20 observations")

    point = m.PredictRequestPointsItem.from_dict(best.best_observed.assignments.to_dict())
    preds = ok(
        predict_api.sync_detailed(sid, client=client, body=m.PredictRequest(points=[point, point])),
        200,
        m.PredictResponse,
        "predict",
    )
    check(len(preds.predictions) == 2, f"{len(preds.predictions)} predictions for 2 points")
    check(all(math.isfinite(p.mean) and p.stddev >= 0 for p in preds.predictions), "non-finite prediction")

    seen = {}
    after = None
    while True:
        kw = {"after": after} if after else {}
        page = ok(
            list_observations.sync_detailed(sid, client=client, limit=7, format_=m.ListObservationsFormat.JSON, **kw),
            200,
            m.ObservationPage,
            "list_observations (json)",
        )
        for o in page.observations:
            seen[str(o.id)] = o.value
        after = page.next_cursor if isinstance(page.next_cursor, str) else None
        if not after:
            break
    check(seen == told, f"JSON pages hold {len(seen)} observations, {len(told)} were stored, or values differ")

    req = list_observations._get_kwargs(sid, format_=m.ListObservationsFormat.CSV)
    res = client.get_httpx_client().request(**req)
    check(res.status_code == 200, f"CSV export status {res.status_code}")
    check(res.headers.get("content-type", "").startswith("text/csv"), f"CSV content type {res.headers.get('content-type')}")
    rows = list(csv.DictReader(io.StringIO(res.text)))
    check(len(rows) == args.rounds, f"CSV has {len(rows)} rows")
    for col in ("temperature", "catalyst_ppm", "stir_rpm", "solvent", "value"):
        check(col in rows[0], f"CSV has no column {col}: {list(rows[0])}")
    check(
        sorted(float(r["value"]) for r in rows) == sorted(told.values()),
        "CSV values differ from the stored observations",
    )
    print(
        f"generated client study: OK ({args.rounds} rounds, best {best.best_observed.value:.4f}, "
        f"{len(seen)} observations as JSON and CSV)"
    )


if __name__ == "__main__":
    main()
