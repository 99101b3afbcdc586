#!/usr/bin/env python3
"""Fit auto's cost model to measured all-to-all times, write a tuning file, and report how auto
does against the best measured selection and the MPI libraries' own alltoall.

    scripts/calibrate.py fit  --model-tool build/x/benchmarks/mpia_model CSV... [-o tuning.txt] [--rules]
                              [--fix o_recv_intra=0,...] [--points]
    scripts/calibrate.py grid --model-tool build/x/benchmarks/mpia_model CSV... [--tuning FILE] [--md]
    scripts/calibrate.py errors --model-tool build/x/benchmarks/mpia_model CSV... [--tuning FILE]

CSV: rows of measured times with (at least) the columns nranks, ppn, bytes, selection, time_us
(aliases: P, block_bytes, size; algorithm, variant; time, median_max_us, avg_us, t_us; without
ppn, nranks / nodes: mpia_bench's own --csv reads as it is, less its auto rows, whose
algorithm column is the model's pick, not what the trial settled on, and its blocking
MPIX_Alltoall rows where the same run timed our algorithms persistent: auto ran that call). Rows whose
selection is not one of the library's algorithms (the MPI library's own, named ompi / mpich /
system / MPI_Alltoall / "...(ompi-ext)") are the baselines of the grid. An `auto` row is ignored
by the fit.

fit: the model's prediction is linear in its ten constants (mpia_model prints the
coefficients), so the constants are the non-negative least-squares solution of the relative
errors (every measurement weighs the same whatever its size). --fix holds some constants at
given values and fits the others (e.g. --fix o_recv_intra=0,o_recv_inter=0,g_inflight=0: the
model without receive-side and in-flight costs). The result is a tuning file with one `model`
line (MPIX_TUNING=<file>), with --points the fitted prediction against the measurement at
every point (comment lines), and with --rules one rule per measured point where the fitted
model's choice is more than 10 % slower than the best measured selection (pinning that
selection for that P and block size).

grid: for every (P, ppn, bytes) measured: the best selection and its time, what auto picks
(the model of --tuning, else the built-in one) and its measured time (when the sweep measured
it), and the fastest baseline; auto/best and auto/peers.

errors: the model's relative error (the tuning file's constants, else the built-in ones) over
every measured time of one of its selections: a calibration judged on points it was not fitted
to. Pure Python 3 + numpy.
"""
import argparse
import csv
import os
import subprocess
import sys
from collections import defaultdict

try:
    import numpy as np
except ImportError:
    # The python3 first on PATH may be a separate installation (/usr/local/bin) that does not
    # see the distribution's python3-numpy (scripts/setup.sh installs it): run under that one.
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and \
            os.access("/usr/bin/python3", os.X_OK) and not os.environ.get("MPIA_CALIBRATE_REEXEC"):
        os.environ["MPIA_CALIBRATE_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit("calibrate.py: needs numpy (Debian: apt-get install python3-numpy, or run "
             "scripts/setup.sh; then /usr/bin/python3 scripts/calibrate.py ...)")

# The model's constants in mpia_model's column order (model.hpp's CostModel); a bandwidth's
# column is inv_<name>, the coefficient of its inverse.
CONSTANTS = ["o_intra", "o_inter", "lat_intra", "lat_inter", "bw_intra", "bw_inter", "bw_copy",
             "o_recv_intra", "o_recv_inter", "g_inflight"]
COLUMNS = ["inv_" + c if c.startswith("bw") else c for c in CONSTANTS]
BASELINES = ("smpi", "ompi", "mpich", "system", "mpi_alltoall", "peers")
ALIASES = {
    "nranks": ("nranks", "P", "np", "ranks"),
    "ppn": ("ppn", "Q"),
    "bytes": ("bytes", "block_bytes", "size", "block"),
    "selection": ("selection", "algorithm", "variant"),
    "time_us": ("time_us", "time", "median_max_us", "avg_us", "t_us", "max_us"),
}


def read_rows(paths, platform=None):
    """The usable rows; a CSV with a platform column (the simulated sweep's) holds several
    machines, and the rows of one only are read: --platform, or the only one there is. A
    comma-separated --platform reads several: one fit over them (an out-of-sample check fits on
    some machines and grids the others)."""
    rows, seen = [], set()
    wanted = set(platform.split(",")) if platform else None
    for path in paths:
        with open(path, newline="") as f:
            lines = [l for l in f if not l.startswith("#")]
        for r in csv.DictReader(lines):
            if r.get("platform"):
                seen.add(r["platform"])
                if wanted is not None and r["platform"] not in wanted:
                    continue
            out = {}
            for key, names in ALIASES.items():
                for n in names:
                    if n in r and r[n] != "":
                        out[key] = r[n]
                        break
            if "ppn" not in out and "nranks" in out and r.get("nodes", "").isdigit() \
                    and int(r["nodes"]) > 0 and int(out["nranks"]) % int(r["nodes"]) == 0:
                out["ppn"] = str(int(out["nranks"]) // int(r["nodes"]))  # mpia_bench's CSV
            if len(out) < len(ALIASES):
                continue
            # mpia_bench's auto runs what its trial settled on, its algorithm column names the
            # model's pick: not that selection's time
            if r.get("variant") == "auto":
                continue
            try:
                rows.append(
                    {
                        "nranks": int(out["nranks"]),
                        "ppn": int(out["ppn"]),
                        "bytes": int(out["bytes"]),
                        # mpia_bench's algorithm column: "tra2:... (as init)" for MPIX_Alltoall
                        "selection": out["selection"].split(" (")[0].strip(),
                        "time_us": float(out["time_us"]),
                        # mpia_bench's blocking MPIX_Alltoall: the selection MPIX_ALLTOALL names
                        # (scripts/calibrate_cluster.sh's tra2 pairs), or auto's
                        "blocking": r.get("variant", "").startswith("MPIX_"),
                        "file": path,
                    }
                )
            except ValueError:
                continue
    # A run that timed our algorithms persistent beside the blocking call ran that call under
    # auto (a trial, whose choice the algorithm column does not show): its rows are not a
    # selection's; a run of the blocking call alone is one of MPIX_ALLTOALL's selection.
    point = lambda r: (r["file"], r["nranks"], r["ppn"], r["bytes"])
    persistent = {point(r) for r in rows if not r["blocking"] and not is_baseline(r["selection"])}
    rows = [r for r in rows if not (r["blocking"] and point(r) in persistent)]
    if platform is None and len(seen) > 1:
        sys.exit("calibrate: rows of several platforms (%s): choose one with --platform"
                 % ", ".join(sorted(seen)))
    if not rows:
        sys.exit("calibrate: no usable rows (need nranks, ppn, bytes, selection, time_us)")
    return rows


def is_baseline(sel):
    s = sel.lower()
    # Open MPI's persistent alltoall: mpia_bench's MPI_Alltoall_init, "MPIX_Alltoall_init(ompi-ext)"
    return s.startswith(BASELINES) or s.startswith("mpi_") or "(ompi-ext)" in s


def model_rows(tool, nranks, ppn, sizes, selections=None, model=None, tuning=None):
    """mpia_model's CSV for one machine: {(bytes, selection): row} plus {bytes: auto's pick}."""
    cmd = [tool, "--nranks", str(nranks), "--ppn", str(ppn), "--bytes", ",".join(map(str, sizes))]
    if selections:
        cmd += ["--select", ";".join(selections)]
    if model:
        cmd += ["--model", model]
    if tuning:
        cmd += ["--tuning", tuning]
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    lines = [l for l in text.splitlines() if not l.startswith("#")]
    terms, picks = {}, {}
    for r in csv.DictReader(lines):
        b = int(r["bytes"])
        terms[(b, r["selection"])] = r
        if r["auto"] == "1":
            picks[b] = r["selection"]
    return terms, picks


def auto_picks(tool, nranks, ppn, sizes, model=None, tuning=None):
    _, picks = model_rows(tool, nranks, ppn, sizes, None, model, tuning)
    return picks


def nnls(A, b, iters=200):
    """Lawson-Hanson non-negative least squares: min |Ax - b|, x >= 0."""
    n = A.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    for _ in range(iters):
        w = A.T @ (b - A @ x)
        if passive.all() or (w[~passive] <= 1e-12 * np.abs(w).max(initial=1)).all():
            break
        j = np.argmax(np.where(passive, -np.inf, w))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(A[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > 1e-30
            x[~passive] = 0
    return x


def machines(rows):
    by = defaultdict(list)
    for r in rows:
        by[(r["nranks"], r["ppn"])].append(r)
    return by


def fit(args):
    rows = [r for r in read_rows(args.csv, args.platform) if not is_baseline(r["selection"])
            and not r["selection"].startswith("auto")]
    # Where two costs overlap (linear: posting vs the NIC) the larger counts: which one that is
    # depends on the constants, so fit, recompute the terms under the fit, and fit again.
    fixed = parse_fix(args.fix)
    model = None
    for _ in range(4):
        model, A, b, x, points = fit_once(args, rows, model, fixed)
    pred = A @ x
    rel = np.abs(pred - b) / b
    out = ["# mpi-advance tuning file written by scripts/calibrate.py from %s" % " ".join(args.csv),
           "# %d points; relative error median %.1f %%, 90th percentile %.1f %%, max %.1f %%"
           % (len(b), 100 * np.median(rel), 100 * np.percentile(rel, 90), 100 * rel.max())]
    if fixed:
        out.append("# held: " + ",".join("%s=%g" % kv for kv in fixed.items()))
    out.append("model " + model)
    if args.points:
        out.append("# %5s %4s %8s  %-36s %11s %12s %7s" % ("P", "ppn", "bytes", "selection",
                                                          "measured_us", "predicted_us", "error"))
        for (P, Q, B, sel, t), p in zip(points, pred / b):
            out.append("# %5d %4d %8d  %-36s %11.2f %12.2f %+6.1f%%" % (P, Q, B, sel, t, p * t,
                                                                       100 * (p - 1)))
    if args.rules:
        out += rules_for(args, read_rows(args.csv, args.platform), model)
    text = "\n".join(out) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    sys.stdout.write(text)


def parse_fix(text):
    """--fix "k=v,...": {constant: value in the model's units (bandwidths in bytes/s)}."""
    fixed = {}
    for kv in filter(None, (text or "").split(",")):
        k, _, v = kv.partition("=")
        if k not in CONSTANTS:
            sys.exit("calibrate: --fix: unknown constant '%s' (one of %s)" % (k, ", ".join(CONSTANTS)))
        try:
            fixed[k] = float(v)
        except ValueError:
            sys.exit("calibrate: --fix: bad value in '%s'" % kv)
    return fixed


def coefficient(name, value):
    """What multiplies a constant's term: a bandwidth's inverse (0 = free), else itself."""
    if name.startswith("bw"):
        return 1.0 / value if value > 0 else 0.0
    return value


def fit_once(args, rows, model, fixed):
    A, b, points = [], [], []
    if model is None and fixed:
        model = ",".join("%s=%.6g" % kv for kv in fixed.items())  # the first branch choice
    for (P, Q), rs in sorted(machines(rows).items()):
        sels = sorted({r["selection"] for r in rs})
        terms, _ = model_rows(args.model_tool, P, Q, sorted({r["bytes"] for r in rs}), sels, model)
        for r in rs:
            t = terms.get((r["bytes"], r["selection"]))
            if t is None:
                continue
            coef = [float(t[k]) for k in COLUMNS]
            w = 1.0 / r["time_us"]
            A.append([c * w for c in coef])
            b.append(r["time_us"] * 1e-6 * w)
            points.append((P, Q, r["bytes"], r["selection"], r["time_us"]))
    if not A:
        sys.exit("calibrate: no measured row is one of the model's selections")
    A, b = np.array(A), np.array(b)
    # Held constants: their share of each time is known; the others fit the rest.
    held = np.array([coefficient(c, fixed[c]) if c in fixed else 0.0 for c in CONSTANTS])
    free = np.array([c not in fixed for c in CONSTANTS])
    rest = b - A @ held
    # Columns scaled to unit norm so that seconds-per-message and seconds-per-byte fit alike.
    Af = A[:, free]
    norms = np.linalg.norm(Af, axis=0)
    norms[norms == 0] = 1
    x = held.copy()
    x[free] = nnls(Af / norms, rest) / norms
    parts = []
    for name, v in zip(CONSTANTS, x):
        if name.startswith("bw"):
            parts.append("%s=%.4g" % (name, 1.0 / v if v > 0 else 0))  # 0: free
        else:
            parts.append("%s=%.4g" % (name, v))
    return ",".join(parts), A, b, x, points


def best_by_point(rows):
    best, peers, measured = {}, {}, defaultdict(dict)
    for r in rows:
        key = (r["nranks"], r["ppn"], r["bytes"])
        if is_baseline(r["selection"]):
            if key not in peers or r["time_us"] < peers[key][1]:
                peers[key] = (r["selection"], r["time_us"])
            continue
        if r["selection"].startswith("auto"):
            continue
        measured[key][r["selection"]] = r["time_us"]
        if key not in best or r["time_us"] < best[key][1]:
            best[key] = (r["selection"], r["time_us"])
    return best, peers, measured


def rules_for(args, rows, model):
    best, _, measured = best_by_point(rows)
    out = []
    for (P, Q), _ in sorted(machines(rows).items()):
        sizes = sorted({k[2] for k in best if k[:2] == (P, Q)})
        picks = auto_picks(args.model_tool, P, Q, sizes, model=model)
        for B in sizes:
            sel, t = best[(P, Q, B)]
            got = measured[(P, Q, B)].get(picks.get(B))
            if got is None or got > 1.1 * t:
                out.append("alltoall nranks=%d bytes=%d %s   # model: %s" % (P, B, sel, picks.get(B)))
    return out


def grid(args):
    rows = read_rows(args.csv, args.platform)
    best, peers, measured = best_by_point(rows)
    auto_rows = {(r["nranks"], r["ppn"], r["bytes"]): r for r in rows
                 if r["selection"].startswith("auto")}
    table = []
    for (P, Q), _ in sorted(machines(rows).items()):
        sizes = sorted({k[2] for k in best if k[:2] == (P, Q)})
        picks = auto_picks(args.model_tool, P, Q, sizes, tuning=args.tuning)
        for B in sizes:
            key = (P, Q, B)
            bsel, bt = best[key]
            pick = picks.get(B)
            at = measured[key].get(pick)
            if at is None and key in auto_rows and args.auto_rows:
                at = auto_rows[key]["time_us"]
            peer = peers.get(key)
            table.append((P, Q, B, bsel, bt, pick, at, peer))
    hits = [r for r in table if r[6] is not None and r[6] <= 1.1 * r[4]]
    known = [r for r in table if r[6] is not None]
    if args.md:
        print("| P | block | best of ours (us) | auto picks (us) | auto / best | fastest peer (us) | best / peer | auto / peer |")
        print("|---|---|---|---|---|---|---|---|")
    else:
        print("P,ppn,bytes,best,best_us,auto,auto_us,auto_over_best,peer,peer_us,best_over_peer,auto_over_peer")
    for P, Q, B, bsel, bt, pick, at, peer in table:
        ab = "%.2f" % (at / bt) if at is not None else "n/a"
        ap = "%.2f" % (at / peer[1]) if at is not None and peer else "n/a"
        bp = "%.2f" % (bt / peer[1]) if peer else "n/a"
        if args.md:
            print("| %d | %d B | %s %.1f | %s %s | %s | %s | %s | %s |" % (
                P, B, bsel, bt, pick, "%.1f" % at if at is not None else "(not measured)", ab,
                "%s %.1f" % peer if peer else "n/a", bp, ap))
        else:
            print("%d,%d,%d,%s,%.3f,%s,%s,%s,%s,%s,%s,%s" % (
                P, Q, B, bsel, bt, pick, "%.3f" % at if at is not None else "", ab,
                peer[0] if peer else "", "%.3f" % peer[1] if peer else "", bp, ap))
    print("%sauto within 10 %% of the best at %d of %d measured points (%d not measured)" % (
        "\n" if args.md else "# ", len(hits), len(known), len(table) - len(known)))


def errors(args):
    """The model's prediction (the tuning file's constants, else the built-in ones) against every
    measured time of one of its selections: a fit judged on points it was not fitted to."""
    rows = [r for r in read_rows(args.csv, args.platform) if not is_baseline(r["selection"])
            and not r["selection"].startswith("auto")]
    rel = []
    for (P, Q), rs in sorted(machines(rows).items()):
        sels = sorted({r["selection"] for r in rs})
        terms, _ = model_rows(args.model_tool, P, Q, sorted({r["bytes"] for r in rs}), sels,
                              tuning=args.tuning)
        for r in rs:
            t = terms.get((r["bytes"], r["selection"]))
            if t is not None:
                rel.append(abs(float(t["predicted_us"]) / r["time_us"] - 1))
    if not rel:
        sys.exit("calibrate: no measured row is one of the model's selections")
    rel = np.array(rel)
    print("%d points; relative error median %.1f %%, 90th percentile %.1f %%, max %.1f %%"
          % (len(rel), 100 * np.median(rel), 100 * np.percentile(rel, 90), 100 * rel.max()))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("fit", "grid", "errors"):
        s = sub.add_parser(name)
        s.add_argument("csv", nargs="+")
        s.add_argument("--model-tool", required=True, help="path of the mpia_model executable")
        s.add_argument("--platform", help="the rows of this platform only (a CSV with a "
                       "platform column, e.g. cluster or fattree); fit: a comma-separated list "
                       "fits one model over several")
    f = sub.choices["fit"]
    f.add_argument("-o", "--output", help="tuning file to write (also printed)")
    f.add_argument("--rules", action="store_true", help="pin the best selection where the model misses")
    f.add_argument("--fix", help="hold these constants (k=v,...; bandwidths in bytes/s) and fit the others")
    f.add_argument("--points", action="store_true",
                   help="the fitted prediction against the measurement at every point (comments)")
    g = sub.choices["grid"]
    g.add_argument("--tuning", help="tuning file auto reads (default: the built-in model)")
    g.add_argument("--md", action="store_true", help="a Markdown table")
    g.add_argument("--auto-rows", action="store_true",
                   help="use the sweep's measured auto rows when auto's pick was not swept")
    e = sub.choices["errors"]
    e.add_argument("--tuning", help="tuning file whose model line to judge (default: the built-in model)")
    args = p.parse_args()
    {"fit": fit, "grid": grid, "errors": errors}[args.cmd](args)


if __name__ == "__main__":
    main()
