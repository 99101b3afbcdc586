#!/usr/bin/python3
"""The table and plot of `auto` against the best candidate on every simulated machine kind
(issue #18), from scripts/smpi/trial.sh's CSVs.

    /usr/bin/python3 scripts/smpi/trial_report.py [--png FILE] [--held-out CSV ...] CSV...

CSV: trial.sh's trial.csv files (docs/results/smpi/trial_*.csv): platform, P, ppn, bytes,
selection, time_us, with the rows auto_measured (the persistent auto request after its trial)
and auto_model (MPIX_AUTO=model). Alltoallv rows have platform "<kind>/<pattern>".

--bench NAME=ALL.csv[,MODEL.csv] (repeatable) reads mpia_bench's own CSVs instead, from real
ranks (scripts/auto_check.sh): ALL.csv a run of every variant (its `auto` row, the persistent
request timed after its trial, is "auto measured"; MPI_<Call> the MPI library's own), MODEL.csv
the same sizes under MPIX_AUTO=model with --variants auto ("auto model": the time in ALL.csv of
the algorithm it ran, where one of ALL.csv's variants ran it, else its own time scaled by the
ratio of the two runs' MPI_<Call> times: separate runs of a real machine differ by up to ~10 %
where one run's variants agree within a few); the machine is NAME (alltoall) or NAME/<pattern>
(alltoallv); times are the median of the per-iteration slowest rank.

Prints a markdown table, one row per (machine, P, block): the best candidate and its time,
auto measured / best, auto model / best, and where the CSVs have SMPI's own collective (rows
smpi:<selection>, alltoallv) the faster of them / best, and in a report of neighbor rows only
direct / best (what locality-aware exchange gains where it wins); then per machine kind the points where auto measured is
within 5 % and within 10 % of the best (issues 18 and 19) and where auto model is within 10 %. --held-out adds a column: auto
model-only under a model calibrated on other machines (the auto_model rows of a trial.sh run with
TRIAL_TUNING=<the calibration> TRIAL_AUTO_ONLY=1), over the best of the main CSVs. --png draws one panel per machine kind:
auto measured / best and auto model / best at every point (and direct / best on neighbor panels). Needs matplotlib only for --png.
"""
import argparse
import csv
from collections import defaultdict


def load(paths):
    pts = defaultdict(dict)
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                key = (r["platform"], int(r["P"]), int(r["bytes"]))
                pts[key][r["selection"]] = float(r["time_us"])
    return pts


def load_bench(specs, pts):
    """Adds to pts the rows of mpia_bench CSVs (--bench NAME=ALL.csv[,MODEL.csv])."""
    for spec in specs:
        name, _, files = spec.partition("=")
        main, _, model = files.partition(",")

        def read(path):
            out, algo = {}, {}
            with open(path, newline="") as f:
                for r in csv.DictReader(f):
                    plat = name + ("/" + r["pattern"] if r["collective"] == "alltoallv" else "")
                    key = (plat, int(r["P"]), int(r["size"]), r["variant"])
                    out[key] = float(r["median_max_us"])
                    algo[key] = r["algorithm"]
            return out, algo

        base = lambda key: "MPI_Alltoallv" if "/" in key[0] else "MPI_Alltoall"
        m, malgo = read(main)
        ran = {}  # (point, algorithm) -> time: what each of our variants ran, in this run
        for key, t in m.items():
            v = key[3]
            if v == base(key):
                pts[key[:3]]["mpi:" + v] = t
            elif v == "auto":
                pts[key[:3]]["auto_measured"] = t
            elif not v.startswith(("MPI_", "MPIX_", "blk:")) and v != "system":
                pts[key[:3]][v] = t
                ran[key[:3] + (malgo[key],)] = ran[key[:3] + (v,)] = t
        mo, moalgo = read(model) if model else ({}, {})
        for key, t in mo.items():
            b = key[:3] + (base(key),)
            if key[3] != "auto":
                continue
            pick = key[:3] + (moalgo[key],)
            if pick in ran:  # the model's pick, timed in the main run
                pts[key[:3]]["auto_model"] = ran[pick]
            elif b in m and b in mo:
                pts[key[:3]]["auto_model"] = t / mo[b] * m[b]
    return pts


def held_out(paths, table):
    """{(platform, P, bytes): auto model / best}: the auto_model rows of trial.sh runs with a
    calibration elsewhere (TRIAL_TUNING, TRIAL_AUTO_ONLY=1), over the best of the main CSVs."""
    best = {r[:3]: r[4] for r in table}
    out = {}
    for key, t in load(paths).items():
        if "auto_model" in t and key in best:
            out[key] = t["auto_model"] / best[key]
    return out


def rows(pts):
    table = []
    for (plat, P, b), t in sorted(pts.items()):
        cands = {k: v for k, v in t.items() if not k.startswith(("auto", "smpi:", "mpi:"))}
        if not cands:
            continue
        best = min(cands, key=cands.get)
        ratio = lambda k: t[k] / cands[best] if k in t else None
        peers = [v for k, v in t.items() if k.startswith(("smpi:", "mpi:"))]
        table.append((plat, P, b, best, cands[best], ratio("auto_measured"), ratio("auto_model"),
                      min(peers) / cands[best] if peers else None,
                      ratio("direct") if "/neighbor" in plat else None))
    return table


def kind_of(plat):
    """"kind", "kind/pattern" (alltoallv) or "kind/neighbor-pattern" -> the table's group."""
    if "/" not in plat:
        return plat
    return plat.split("/")[0] + (" neighbor" if "/neighbor" in plat else " alltoallv")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="*")
    ap.add_argument("--bench", action="append", default=[], metavar="NAME=ALL.csv[,MODEL.csv]")
    ap.add_argument("--png")
    ap.add_argument("--held-out", action="append", default=[], metavar="CSV")
    args = ap.parse_args()
    if not args.csv and not args.bench:
        ap.error("give trial.sh CSVs or --bench NAME=ALL.csv[,MODEL.csv]")
    pts = load(args.csv)
    table = rows(load_bench(args.bench, pts))
    real = bool(args.bench)
    held = held_out(args.held_out, table)
    f = lambda x: "%.2f" % x if x is not None else "n/a"
    peers = any(r[7] is not None for r in table)
    # direct / best: in a report of neighbor rows only (not a column of n/a beside alltoall's)
    direct = bool(table) and all("/neighbor" in r[0] for r in table)
    head = "| machine | P | block | best candidate | us | auto measured / best | auto model / best |"
    peer_head = " the MPI's own / best |" if real else " faster SMPI selection / best |"
    print(head + (" model fitted elsewhere / best |" if held else "")
          + (peer_head if peers else "") + (" direct / best |" if direct else ""))
    print("|---" * (7 + bool(held) + peers + direct) + "|")
    for plat, P, b, best, bt, am, ao, pe, di in table:
        extra = " %s |" % f(held.get((plat, P, b))) if held else ""
        extra += " %s |" % f(pe) if peers else ""
        extra += " %s |" % f(di) if direct else ""
        # neighbor patterns other than random and mixed take the n of their grid or matrix, not
        # bytes
        in_bytes = "/neighbor" not in plat or any(
            "neighbor-%s" % p in plat for p in ("random", "mixed"))
        size = "%d B" % b if in_bytes else "n = %d" % b
        print("| %s | %d | %s | %s | %.1f | %s | %s |%s" % (plat, P, size, best, bt, f(am), f(ao), extra))
    print()
    print("| machine | points | auto measured within 5 %% | within 10 %% | auto model within 10 %% |%s"
          % (" model fitted elsewhere within 10 % |" if held else ""))
    print("|---" * (5 + bool(held)) + "|")
    by = defaultdict(list)
    for r in table:
        by[kind_of(r[0])].append(r)
    count = lambda xs, lim: "%d of %d" % (sum(x <= lim for x in xs), len(xs))
    for kind, rs in sorted(by.items()):
        am = [r[5] for r in rs if r[5] is not None]
        ao = [r[6] for r in rs if r[6] is not None]
        ho = [held[r[:3]] for r in rs if r[:3] in held]
        print("| %s | %d | %s | %s | %s |%s" % (kind, len(rs), count(am, 1.05), count(am, 1.10),
                                                 count(ao, 1.10),
                                                 " %s |" % count(ho, 1.10) if held else ""))
    if args.png:
        plot(by, args.png)


def plot(by, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = sorted(by)
    width = max(11, 0.3 * max(len(by[k]) for k in kinds))
    fig, axes = plt.subplots(len(kinds), 1, figsize=(width, 3.2 * len(kinds)), squeeze=False)
    for ax, kind in zip(axes[:, 0], kinds):
        rs = by[kind]
        xs = range(len(rs))
        labels = ["%s P=%d %d%s" % (r[0].split("/")[1].replace("neighbor-", "") if "/" in r[0]
                                      else "", r[1], r[2], "" if "/neighbor" in r[0] else "B")
                  for r in rs]
        # neighbor panels: direct / best too (what node-aware exchange gains where it wins)
        bars = [("auto measured", 5), ("auto model only", 6)]
        if all(r[8] is not None for r in rs):
            bars.append(("direct", 8))
        w = 0.8 / len(bars)
        for i, (name, col) in enumerate(bars):
            ax.bar([x + (i - (len(bars) - 1) / 2) * w for x in xs], [r[col] or 0 for r in rs], w,
                   label=name)
        ax.axhline(1.05, color="k", lw=0.8, ls="--")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=6, rotation=90)
        ax.set_ylabel("time / best")
        ax.set_title(kind, fontsize=9)
        top = max((r[col] or 0) for r in rs for _, col in bars)
        ax.set_ylim(0, max(2.0, min(top, 4.0) * 1.05))
    axes[0, 0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
