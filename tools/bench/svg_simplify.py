#!/usr/bin/env python3
"""Shrinks the bench's SVG plots without changing what they draw (standard library only).

`bench` (plotters) writes one vertex per curve point in pixel coordinates, so a curve of a thousand points on a
900-pixel chart repeats the same vertex many times and lays long runs of vertices on one straight line. In every
`points` list of a <polyline> or <polygon> this drops a vertex equal to the one before it, and a vertex that lies on
the straight segment between its neighbours (exact arithmetic on the written coordinates). The drawn lines and
filled areas are the same; nothing else in the file changes.

    python3 tools/bench/svg_simplify.py FILE.svg ...        # rewrites the files in place
"""

import re
import sys
from fractions import Fraction

POINTS = re.compile(r'(<(?:polyline|polygon)\b[^>]*?\bpoints=")([^"]*)(")')


def simplify(text):
    pts = [tuple(Fraction(v) for v in p.split(",")) for p in text.split()]
    raw = text.split()
    out = []
    for p, s in zip(pts, raw):
        if not out or out[-1][0] != p:
            out.append((p, s))
    changed = True
    while changed:
        changed = False
        kept = []
        for i, (p, s) in enumerate(out):
            if kept and i + 1 < len(out):
                a, b = kept[-1][0], out[i + 1][0]
                cross = (p[0] - a[0]) * (b[1] - a[1]) - (p[1] - a[1]) * (b[0] - a[0])
                forward = (p[0] - a[0]) * (b[0] - p[0]) + (p[1] - a[1]) * (b[1] - p[1])
                if cross == 0 and forward >= 0 and p != b:
                    changed = True
                    continue
            kept.append((p, s))
        out = kept
    return " ".join(s for _, s in out)


def main():
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            before = f.read()
        after = POINTS.sub(lambda m: m.group(1) + simplify(m.group(2)) + m.group(3), before)
        with open(path, "w", encoding="utf-8") as f:
            f.write(after)
        print(f"{path}: {len(before)} -> {len(after)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
