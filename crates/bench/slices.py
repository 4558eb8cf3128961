#!/usr/bin/env python3
"""Runs a queue of bench slices, a few at a time, skipping those already done (standard library only).

A protocol too long for one sitting (seed000, seed002) is run as many small slices (`--first-run K --seeds N`,
`--only`, `--methods`), each into its own directory, and joined afterwards with `bench merge`. This driver keeps
the machine busy with such a list and can be stopped and restarted at any time: a slice whose directory already
holds `<suite>.json` is skipped, and an interrupted slice leaves no result file, so it is run again.

    python3 crates/bench/slices.py JOBS... --bench target/release/bench [--workers 2] [--logs DIR]

Each JOBS file (taken in the order given) has one slice per line, `OUT_DIR SUITE ARGS...` (relative OUT_DIR: relative to JOBS' directory; `#` starts
a comment), e.g. `seed002_slices/hartmann_drbo-kde_r0 seed002 --only =hartmann --methods drbo-kde --first-run 0
--seeds 1`. Every slice runs with `BENCH_THREADS=1`; the slices themselves run `--workers` at a time, in file
order. Progress (start, end, seconds, failures) goes to stderr; each slice's own output to `LOGS/<name>.log`.
"""

import argparse
import os
import shlex
import subprocess
import sys
import threading
import time


def parse_jobs(path):
    base = os.path.dirname(os.path.abspath(path))
    jobs = []
    with open(path) as f:
        for line in f:
            words = shlex.split(line, comments=True)
            if len(words) < 2:
                continue
            out = words[0] if os.path.isabs(words[0]) else os.path.join(base, words[0])
            jobs.append((out, words[1], words[2:]))
    return jobs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jobs", nargs="+")
    ap.add_argument("--bench", required=True, help="the bench binary (a copy, so that rebuilding does not touch it)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--logs", default="slice-logs")
    args = ap.parse_args()
    os.makedirs(args.logs, exist_ok=True)
    jobs = [j for path in args.jobs for j in parse_jobs(path)]
    pending = [j for j in jobs if not os.path.exists(os.path.join(j[0], j[1] + ".json"))]
    total = len(pending)
    print(f"{total} slices to run", file=sys.stderr, flush=True)
    lock = threading.Lock()
    done = [0]

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                out, suite, rest = pending.pop(0)
            name = os.path.basename(out.rstrip("/"))
            cmd = [args.bench, suite, *rest, "--out", out]
            started = time.time()
            print(f"start {name}: {shlex.join(cmd)}", file=sys.stderr, flush=True)
            with open(os.path.join(args.logs, name + ".log"), "w") as log:
                rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "BENCH_THREADS": "1"})
            with lock:
                done[0] += 1
                status = "done" if rc == 0 else f"FAILED (exit {rc})"
                print(f"{status} {name} in {time.time() - started:.0f} s ({done[0]}/{total})", file=sys.stderr, flush=True)

    threads = [threading.Thread(target=worker) for _ in range(max(1, args.workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
