#!/usr/bin/env python3
"""Creates the resources schemathesis needs to reach past the 404s, and prints them as shell assignments.

Usage: eval "$(python3 tools/contract/schemathesis_fixture.py --url http://127.0.0.1:PORT [--token TOKEN])"
Sets BAYESD_ST_STUDY_ID (a study with all four parameter types, 8 observations so /best and /predict have a
model, and open suggestions), BAYESD_ST_SUGGESTION_ID (an open suggestion of it), BAYESD_ST_ABANDON_ID (another,
for abandon_suggestion), BAYESD_ST_OBSERVATION_ID (one of its observations) and BAYESD_ST_ARCHIVE_STUDY_ID (a study
of its own for archive_study). .ci/schemathesis.toml reads them. Uses the bayesd client (clients/python).
"""
import argparse
import math

import bayesd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", default=None)
    args = ap.parse_args()
    client = bayesd.Client(args.url, token=args.token)
    params = [
        bayesd.float_param("temperature", 20, 80),
        bayesd.float_param("catalyst_ppm", 1, 1000, log=True),
        bayesd.int_param("stir_rpm", 100, 1000),
        bayesd.categorical_param("solvent", ["water", "ethanol", "dmso"]),
    ]
    study = client.create_study("schemathesis", params, objective="yield", seed=1)
    study.optimize(lambda a: math.sin(a["temperature"] / 10) + math.log(a["catalyst_ppm"]) / 7, 8)
    keep, abandon = study.suggest(count=2)
    other = client.create_study("schemathesis-archive", params[:1])
    for name, value in (
        ("BAYESD_ST_STUDY_ID", study.id),
        ("BAYESD_ST_SUGGESTION_ID", keep.id),
        ("BAYESD_ST_ABANDON_ID", abandon.id),
        ("BAYESD_ST_OBSERVATION_ID", study.observations()[0].id),
        ("BAYESD_ST_ARCHIVE_STUDY_ID", other.id),
    ):
        print(f"export {name}={value}")


if __name__ == "__main__":
    main()
