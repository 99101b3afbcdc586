#!/usr/bin/env python3
"""The verdict of mpia_bench CSVs (scripts/bench.sh prints it last): per collective, MPI library
and process count, how mpi-advance's `auto` compares with the MPI library's own call -- the
range of time(auto) / time(MPI_<Call>) over the sizes (and patterns), where auto is faster, and
what auto chose at each size -- and the same ratio for the best of our fixed algorithms.
Python standard library only (no numpy).

    python3 benchmarks/verdict.py [--metric avg|median] [--cores N] results/alltoall_*.csv ...

--metric median (default): the CSV's median_max_us, the median over the timed iterations of
the slowest rank's time (the tables' `ratio_med`): a busy or oversubscribed machine's hiccups
(a rank descheduled for milliseconds) move it little; avg: avg_us, each rank's mean averaged
over the ranks (the tables' `ratio`, OSU's average latency), which such hiccups can multiply.
--cores N marks process counts above N as oversubscribed. plot_bench.py draws the same points.
"""
import argparse
import csv
import re
import sys
import textwrap

COLLECTIVE_ORDER = {"alltoall": 0, "alltoallv": 1, "neighbor": 2}
METRICS = {"avg": "avg_us", "median": "median_max_us"}
# Variants that are not one fixed algorithm of ours: auto (persistent, blocking, the
# environment's selection) and the pass-through to the MPI library.
NOT_FIXED = {"auto", "blk:auto", "system", "blk:system"}


def load(path):
    """The rows of one mpia_bench CSV that were timed (skipped variants have no iterations)."""
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("iters", "0") not in ("", "0")]


def mpi_name(library):
    """'Open MPI v4.1.4, package: ...' -> 'Open MPI v4.1.4'; 'MPICH Version: 4.0 ...' -> 'MPICH 4.0'."""
    m = re.match(r"\s*MPICH Version:\s*(\S+)", library)
    if m:
        return "MPICH " + m.group(1)
    return library.split(",")[0].strip() or "MPI"


def size_text(collective, size):
    if collective == "neighbor":
        return f"n={size}"
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def span_text(collective, sizes):
    lo, hi = size_text(collective, min(sizes)), size_text(collective, max(sizes))
    if lo == hi:
        return lo
    if collective == "neighbor":
        return f"n={min(sizes)}-{max(sizes)}"
    return f"{lo}-{hi}"


def is_fixed(variant):
    """One fixed algorithm (or parameter set) of ours: what the envelope is made of."""
    return not variant.startswith(("MPI_", "MPIX_")) and variant not in NOT_FIXED


class Point:
    """One configuration (pattern, size) of one run."""

    def __init__(self, size, base, base_name, auto, chose, best, best_variant):
        self.size, self.base, self.base_name = size, base, base_name
        self.auto, self.chose = auto, chose
        self.best, self.best_variant = best, best_variant

    def ratio(self, t):
        return t / self.base if t is not None and self.base else None


def points(rows, metric="median"):
    """{pattern: [Point, ...] by size} of one run's rows; times in us."""
    column = METRICS[metric]
    cases = {}
    for r in rows:
        cases.setdefault((r.get("pattern", ""), int(r["size"])), []).append(r)
    out = {}
    for (pattern, size), rs in sorted(cases.items()):
        def time(r):
            imbalance = float(r.get("imbalance_us") or 0) > 0
            if imbalance:  # the time after the last arrival, of the same kind
                v = r.get("after_median_max_us" if metric == "median" else "after_mean_us")
            else:
                v = r.get(column)
            return float(v) if v not in (None, "") else None

        base = next((r for r in rs if r["variant"].startswith("MPI_")
                     and not r["variant"].endswith("_init")), None)
        auto = next((r for r in rs if r["variant"] == "auto"), None)
        fixed = [(time(r), r["variant"]) for r in rs if is_fixed(r["variant"])
                 and time(r) is not None]
        best = min(fixed) if fixed else (None, None)
        out.setdefault(pattern, []).append(Point(
            size, time(base) if base else None, base["variant"] if base else None,
            time(auto) if auto else None,
            (auto.get("chosen") or auto.get("algorithm") or "?") if auto else None,
            best[0], best[1]))
    return out


def ratio_range(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}"


def choices(collective, pts):
    """'1 B-64 B linear, 512 B pairwise': auto's choice per size, equal neighbours merged (just
    the choice where it is the same at every size)."""
    runs = []
    for p in pts:
        if p.chose is None:
            continue
        if runs and runs[-1][2] == p.chose:
            runs[-1][1] = p.size
        else:
            runs.append([p.size, p.size, p.chose])
    if len(runs) == 1 and len(pts) > 1:
        return runs[0][2]
    return ", ".join(f"{span_text(collective, [a, b])} {c}" for a, b, c in runs)


def wrap_items(head, items, width=96):
    """head + items joined by ', ', wrapped between items (never inside '512 B linear')."""
    lines, line = [], head + items[0]
    for item in items[1:]:
        if len(line) + 2 + len(item) > width:
            lines.append(line + ",")
            line = "      " + item
        else:
            line += ", " + item
    return lines + [line]


def runs_of(paths):
    """[(sort key, collective, imbalance, rows)] one per CSV: alltoall, alltoallv, neighbor; the
    MPI libraries in the order the files name them first; P ascending."""
    out, mpis = [], []
    for path in paths:
        rows = load(path)
        if not rows:
            continue
        r0 = rows[0]
        coll = r0.get("collective") or "alltoall"
        imbalance = max(float(r.get("imbalance_us") or 0) for r in rows)
        mpi = mpi_name(r0["mpi_library"])
        if mpi not in mpis:
            mpis.append(mpi)
        out.append(((COLLECTIVE_ORDER.get(coll, 9), imbalance > 0, mpis.index(mpi), mpi,
                     int(r0["P"]), path), coll, imbalance, rows))
    out.sort(key=lambda x: x[0])
    return out


def verdict(paths, metric="median", cores=0):
    lines = []
    for key, coll, imbalance, rows in runs_of(paths):
        mpi, nprocs = key[3], key[4]
        nodes = max(int(r.get("nodes") or 1) for r in rows)
        by_pattern = points(rows, metric)
        every = [p for pts in by_pattern.values() for p in pts]
        base = next((p.base_name for p in every if p.base_name), "the MPI library's call")
        auto = [p.ratio(p.auto) for p in every]
        best = [p.ratio(p.best) for p in every]
        known = [r for r in auto if r is not None]
        where = f"P={nprocs}"
        if nodes > 1:
            where += f" on {nodes} nodes"
        if cores and nprocs > cores:
            where += f" (oversubscribed, {cores} cores)"
        if imbalance:
            where += f", arrival imbalance up to {imbalance:g} us"
        sizes = sorted({p.size for p in every})
        over = span_text(coll, sizes)
        if len(by_pattern) > 1:
            over = f"{len(by_pattern)} patterns x {over}"
        lines.append(f"{coll}, {mpi}, {where}:")
        if not known:
            lines.append(f"  no auto or no {base} rows to compare")
            continue
        head = f"  auto / {base} {ratio_range(auto)} over {over}"
        tail = (f"(faster at {sum(r < 1 for r in known)} of {len(known)}; best of ours "
                f"{ratio_range(best)})")
        lines += [f"{head} {tail}"] if len(head) + 1 + len(tail) <= 96 else [head, "      " + tail]
        for pattern, pts in by_pattern.items():
            label = f"  {pattern}: " if pattern else "  "
            if pattern:
                label += f"{ratio_range(p.ratio(p.auto) for p in pts)}; "
            lines += wrap_items(f"{label}auto chose ", choices(coll, pts).split(", "))
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--metric", choices=sorted(METRICS), default="median")
    ap.add_argument("--cores", type=int, default=0,
                    help="process counts above this are marked oversubscribed")
    ap.add_argument("csv", nargs="+")
    a = ap.parse_args(argv[1:])
    lines = verdict(a.csv, a.metric, a.cores)
    if not lines:
        print("verdict.py: no timed rows in " + " ".join(a.csv), file=sys.stderr)
        return 1
    what = ("its mean over iterations averaged over the ranks" if a.metric == "avg" else
            "its median over iterations of the slowest rank")
    print("Verdict: auto (mpi-advance's own choice) against the MPI library's own call")
    print(textwrap.fill(
        f"ratio = auto's time / the MPI call's at the same size, a time being {what}; below "
        "1: auto is faster; best of ours = the fastest of our fixed algorithms at each size; "
        "chose = what auto's timed iterations ran (system: the MPI library's call; a|b: the "
        "rounds differed)", width=92, initial_indent="  ", subsequent_indent="  "))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
