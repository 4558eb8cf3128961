#!/usr/bin/env python3
"""Merges the slices of one peer's `bench robust` runs (tools/peers/peers.py files, compacted by robust_compact.py)
into one file, keeping each slice's provenance.

Why: the peers ran in slices (one process per method × problems × variants × seeds, stopped and resumed over
sessions), one file each, so a peer's results were a dozen files in docs/bench/robust/ and in every `bench
robust-table` command. `bench merge` joins slices too, but it reads them as bench's SuiteResult: it would drop what
only the peers' files hold (top-level `command`, `peer_versions`, `compacted`; each method's `failed`), write indented
JSON and SVGs, and recompute summaries from the curves' last values where peers.py uses `recommended`.

Experiments are joined by name and their runs concatenated per method in input order: an experiment of one slice is
copied as it is, a joined one gets `failed` concatenated and `summary` recomputed as peers.py does. Refused (exit 1):
a (method, experiment, seed) run in two inputs (`bench robust-table` would silently keep the later one), a suite other
than robust, quick mixed with full, an input with another method (or role) than the first's or with several, and an
experiment whose metric, direction, x-axis, optimum or budget differ between inputs.

Provenance: the top-level fields bench reads (`suite`, `git_commit`, `created_at`, `quick`, `machine`) are the first
slice's (`git_commit`: the distinct ones joined by `+`). `slices` lists the inputs in order: file name, `runs` (how
many), `experiments` (how many of the merged list's experiments, in order, it began: slice 1 the first ones, slice 2
the next, ...), `joined` (the seeds it added to an earlier slice's experiment, if any) and its other top-level fields
(`created_at`, `command`, ...); a field every slice has with the same value (`peer_versions`, `compacted`, ...) is
given once at the top level instead. An input that is itself a merged file contributes its `slices`, so a new slice
can be added to a merged file.

    python3 tools/bench/robust_merge_slices.py OUT.json IN.json...
"""
import json
import math
import os
import statistics
import sys

SAME = ("metric", "better", "x_axis", "optimum", "budget")
OWN = ("suite", "experiments", "slices", "merged")  # top-level fields that are not a slice's provenance


def summarise(runs):
    """tools/peers/peers.py's summary: the recommended point's regret, else the curve's last value."""
    finals = [r.get("recommended", r["y"][-1]) for r in runs]
    n = len(finals)
    return {"final_mean": statistics.fmean(finals),
            "final_stderr": statistics.stdev(finals) / math.sqrt(n) if n > 1 else 0.0,
            "final_median": statistics.median(finals), "n_runs": n}


if len(sys.argv) < 3:
    sys.exit("usage: " + __doc__.strip().splitlines()[-1].strip())
merged, experiments, owner, slices, method = None, {}, {}, [], None
for path in sys.argv[2:]:
    doc = json.load(open(path))
    name = os.path.basename(path)
    if doc.get("suite") != "robust":
        sys.exit(f"{name}: suite {doc.get('suite')!r} is not robust")
    methods = {(m["name"], m["role"]) for e in doc["experiments"] for m in e["methods"]}
    if len(methods) != 1 or (method and methods != {method}):
        sys.exit(f"{name}: methods {sorted(methods)}; every input must hold one method, the first input's {method}")
    method = method or methods.pop()
    if merged is None:
        merged = {k: doc[k] for k in ("suite", "git_commit", "created_at", "quick", "machine")}
    elif doc["quick"] != merged["quick"]:
        sys.exit(f"{name}: quick={doc['quick']} but the first input has quick={merged['quick']}")
    else:
        commits = merged["git_commit"].split("+")
        merged["git_commit"] = "+".join(commits + [c for c in doc["git_commit"].split("+") if c not in commits])
    common = {k: v for k, v in doc.items() if k not in OWN}
    if "slices" in doc:  # a merged file: its slices with the fields it gave once
        slices += [{"file": s["file"], **common, **s} for s in doc["slices"]]
    else:
        runs = sum(len(m["runs"]) for e in doc["experiments"] for m in e["methods"])
        slices.append({"file": name, "runs": runs, "experiments": 0, **common})
    new, joined = 0, {}
    for e in doc["experiments"]:
        into = experiments.get(e["name"])
        if into is None:
            experiments[e["name"]] = e
            owner.update({(e["name"], m["name"], r["seed"]): name for m in e["methods"] for r in m["runs"]})
            new += 1
            continue
        differ = [k for k in SAME if e.get(k) != into.get(k)]
        if differ:
            sys.exit(f"{name}: {e['name']} has another {', '.join(differ)} than in an earlier input")
        for m in e["methods"]:
            target = next(t for t in into["methods"] if t["name"] == m["name"])
            for r in m["runs"]:
                key = (e["name"], m["name"], r["seed"])
                if key in owner:
                    sys.exit(f"{name}: {e['name']} / {m['name']} seed {r['seed']} is also in {owner[key]}")
                owner[key] = name
                joined.setdefault(e["name"], []).append(r["seed"])
            target["runs"] += m["runs"]
            target["failed"] = target.get("failed", []) + m.get("failed", [])
            target["summary"] = summarise(target["runs"])
    if "slices" not in doc:
        slices[-1]["experiments"] = new
        if joined:
            slices[-1]["joined"] = joined
    elif new != sum(s["experiments"] for s in doc["slices"]) or joined:
        sys.exit(f"{name}: a merged input must come first (its experiments before any slice's)")
if merged is None:
    sys.exit("no input")
for key in [k for k in slices[0] if k not in ("file", "runs", "experiments", "joined", "created_at", "command")]:
    if all(key in s and s[key] == slices[0][key] for s in slices):
        merged[key] = slices[0][key]
        for s in slices:
            del s[key]
merged["merged"] = "tools/bench/robust_merge_slices.py; provenance per slice in `slices`"
first = ("file", "runs", "experiments", "joined")
merged["slices"] = [{**{k: s[k] for k in first if k in s}, **s} for s in slices]
merged["experiments"] = list(experiments.values())
with open(sys.argv[1], "w") as f:
    json.dump(merged, f, separators=(",", ":"))
print(f"{sys.argv[1]}: {len(owner)} runs, {len(experiments)} experiments, {len(slices)} slices", file=sys.stderr)
