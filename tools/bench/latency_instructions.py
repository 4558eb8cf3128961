#!/usr/bin/env python3
"""Suggest cost in instructions: `bench latency` under callgrind, one run per (binary, d, n), counting only
`engine::study::Study::suggest` (the measured suggest and its warm-up suggest). Instruction counts do not depend on
the machine's load, unlike wall time; each binary must have `bench latency --sizes` (or be given `--env-filter`).

    python3 tools/bench/latency_instructions.py --bench before=/tmp/bench-old --bench after=target/release/bench \
        [--dims 2,6,12] [--sizes 25,50,100,200] [--seeds 3] [--out /tmp/latency-ir.json]

Prints a markdown table (millions of instructions per cell, and each binary's ratio to the first) and, with
`--out`, writes the counts as JSON; finished cells are read back from it, so a stopped run can be resumed.
`--env-filter` passes the size as `BENCH_LATENCY_N` instead of `--sizes` (for builds patched that way).
`--options JSON` passes `--options JSON` (the studies' `algorithm.options`, e.g. `'{"replicates": 0}'` to measure
the acquisition rather than a replicate step) to every binary, which must support it in `bench latency`.
`--noise F` passes `--noise F` (a noisy study with replicates, whose refits also fit the nugget model; each binary
must support it in `bench latency`). A cell's key in `--out` names its options and noise, so a file is only resumed
with the settings it was written with. `--measured-only` counts only the measured suggest of each repeat (the one
`bench latency` times, with the warm start), not its warm-up suggest: callgrind dumps after every suggest, and the
even dumps are the measured ones.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--bench", action="append", required=True, help="LABEL=PATH of a bench binary (first: the baseline)")
parser.add_argument("--dims", default="2,6,12")
parser.add_argument("--sizes", default="25,50,100,200")
parser.add_argument("--seeds", type=int, default=3)
parser.add_argument("--out", help="JSON file of the counts (read back to resume)")
parser.add_argument("--measured-only", action="store_true", help="count the measured suggests, not the warm-ups")
parser.add_argument("--options", help="JSON of algorithm options passed as bench latency --options")
parser.add_argument("--noise", help="observation noise passed as bench latency --noise (a fraction of the range)")
parser.add_argument("--env-filter", action="store_true", help="select n with BENCH_LATENCY_N instead of --sizes")
args = parser.parse_args()

benches = [b.split("=", 1) for b in args.bench]
dims = [int(v) for v in args.dims.split(",")]
sizes = [int(v) for v in args.sizes.split(",")]
counts = json.load(open(args.out)) if args.out and os.path.exists(args.out) else {}


def cell(label: str, d: int, n: int) -> str:
    """A cell's key in `--out`: the binary, d and n, and the options and noise when given (the settings' keys are
    those of files written before they existed)."""
    settings = "".join(f" {name}={value}" for name, value in (("options", args.options), ("noise", args.noise)) if value)
    return f"{label} d={d} n={n}{settings}"


def measure(path: str, d: int, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out",
               "--toggle-collect=engine::study::Study::suggest",
               *(["--dump-after=engine::study::Study::suggest"] if args.measured_only else []), path, "latency", "--quick", "--seeds",
               str(args.seeds), "--only", f"suggest_latency_d{d}", "--out", tmp,
               *(["--options", args.options] if args.options else []),
               *(["--noise", args.noise] if args.noise else [])]
        env = dict(os.environ)
        if args.env_filter:
            env["BENCH_LATENCY_N"] = str(n)
        else:
            cmd += ["--sizes", str(n)]
        run = subprocess.run(cmd, env=env, capture_output=True, text=True)
        found = re.search(r"Collected : (\d+)", run.stderr)
        if run.returncode != 0 or not found:
            sys.exit(f"{' '.join(cmd)} failed:\n{run.stderr[-2000:]}")
        if not args.measured_only:
            return int(found.group(1))
        # Dumps 1, 2, … are the suggests in call order: warm-up, measured, warm-up, measured, …
        dumps = []
        for k in range(1, 2 * args.seeds + 1):
            text = open(f"{tmp}/cg.out.{k}").read()
            dumps.append(int(re.search(r"^totals: (\d+)", text, re.M).group(1)))
        if sum(dumps) != int(found.group(1)):
            sys.exit(f"{' '.join(cmd)}: the dumps do not add up to the collected count")
        return sum(dumps[1::2])


for d in dims:
    for n in sizes:
        for label, path in benches:
            key = cell(label, d, n)
            if key not in counts:
                counts[key] = measure(path, d, n)
                print(f"{key}: {counts[key]} instructions", file=sys.stderr, flush=True)
                if args.out:
                    json.dump(counts, open(args.out, "w"), indent=1)

labels = [label for label, _ in benches]
print("| d | n | " + " | ".join(labels + [f"{b} / {labels[0]}" for b in labels[1:]]) + " |")
print("|---|---|" + "---|" * (2 * len(labels) - 1))
for d in dims:
    for n in sizes:
        row = [counts[cell(label, d, n)] for label in labels]
        cells = [f"{v / 1e6:.0f} M" for v in row] + [f"{v / row[0]:.2f}" for v in row[1:]]
        print(f"| {d} | {n} | " + " | ".join(cells) + " |")
