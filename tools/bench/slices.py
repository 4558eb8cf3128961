#!/usr/bin/env python3
"""Runs a queue of bench slices, a few at a time, skipping those already done (standard library only).

A protocol too long for one sitting (seed000, seed002) is run as many small slices (`--first-run K --seeds N`,
`--only`, `--methods`), each into its own directory, and joined afterwards with `bench merge`. This driver keeps
the machine busy with such a list and can be stopped and restarted at any time: a slice whose directory already
holds `<suite>.json` is skipped, and an interrupted slice leaves no result file, so it is run again.

    python3 tools/bench/slices.py JOBS... --root /tmp/seed002_slices --bench target/release/bench [--workers 2]
        [--logs DIR] [--compact]

Each JOBS file (taken in the order given; `tools/bench/seed000_slices.txt` and `seed002_slices.txt` are the full
protocols of those suites) has one slice per line, `OUT_DIR SUITE ARGS...` (a relative OUT_DIR is relative to
`--root`, a directory outside the repository: raw slices are not committed; `#` starts a comment), e.g.
`hartmann_drbo-kde_r0 seed002 --only =hartmann --methods drbo-kde --first-run 0 --seeds 1`. Every slice runs with
`BENCH_THREADS=1`; the slices themselves run `--workers` at a time, in file order. Progress (start, end, seconds,
failures) goes to stderr; each slice's own output to `LOGS/<name>.log` (default `ROOT/logs`).

The job files are read again before every pick, so lines can be added, removed or reordered while it runs. A slice
being run holds `OUT_DIR.lock` (the pid of its bench process); a slice whose lock names a live process is skipped,
so two queues (or a restarted one) never run the same slice twice.
"""

import argparse
import gzip
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time


def parse_jobs(path, base):
    jobs = []
    with open(path) as f:
        for line in f:
            words = shlex.split(line, comments=True)
            if len(words) < 2:
                continue
            out = words[0] if os.path.isabs(words[0]) else os.path.join(base, words[0])
            jobs.append((out, words[1], words[2:]))
    return jobs


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except (OSError, ValueError):
        return False


def locked(out):
    try:
        with open(out.rstrip("/") + ".lock") as f:
            return alive(int(f.read().strip() or "0"))
    except (OSError, ValueError):
        return False


def compact(out):
    """Gzips a finished slice's traces and removes its SVGs (bench merge redraws them), to keep slices small."""
    for name in os.listdir(out):
        path = os.path.join(out, name)
        if name.endswith("_trace.json"):
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)
        elif name.endswith(".svg"):
            os.remove(path)


def done(job):
    return os.path.exists(os.path.join(job[0], job[1] + ".json"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jobs", nargs="+")
    ap.add_argument("--bench", required=True, help="the bench binary (a copy, so that rebuilding does not touch it)")
    ap.add_argument("--root", required=True, help="where relative OUT_DIRs go (outside the repository)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--logs", help="per-slice logs (default: ROOT/logs)")
    ap.add_argument("--compact", action="store_true",
                    help="after a slice: gzip its *_trace.json and drop its SVGs (bench merge redraws them)")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    args.logs = args.logs or os.path.join(root, "logs")
    os.makedirs(args.logs, exist_ok=True)
    lock = threading.Lock()
    taken = set()
    finished = [0]

    def pick():
        """The next slice that is neither finished, nor running here or elsewhere (job files re-read)."""
        for path in args.jobs:
            for job in parse_jobs(path, root):
                if job[0] not in taken and not done(job) and not locked(job[0]):
                    taken.add(job[0])
                    return job
        return None

    with lock:
        left = sum(1 for path in args.jobs for j in parse_jobs(path, root) if not done(j) and not locked(j[0]))
    print(f"{left} slices to run", file=sys.stderr, flush=True)

    def worker():
        while True:
            with lock:
                job = pick()
            if job is None:
                return
            out, suite, rest = job
            name = os.path.basename(out.rstrip("/"))
            cmd = [args.bench, suite, *rest, "--out", out]
            started = time.time()
            print(f"start {name}: {shlex.join(cmd)}", file=sys.stderr, flush=True)
            lock_path = out.rstrip("/") + ".lock"
            os.makedirs(os.path.dirname(lock_path), exist_ok=True)
            with open(os.path.join(args.logs, name + ".log"), "w") as log:
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "BENCH_THREADS": "1"})
                with open(lock_path, "w") as f:
                    f.write(str(proc.pid))
                rc = proc.wait()
            if rc == 0 and args.compact:
                compact(out)
            try:
                os.remove(lock_path)
            except OSError:
                pass
            with lock:
                finished[0] += 1
                status = "done" if rc == 0 else f"FAILED (exit {rc})"
                print(f"{status} {name} in {time.time() - started:.0f} s ({finished[0]} finished)", file=sys.stderr, flush=True)

    threads = [threading.Thread(target=worker) for _ in range(max(1, args.workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
