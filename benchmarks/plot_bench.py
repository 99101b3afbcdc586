#!/usr/bin/env python3
"""Plots of mpia_bench CSVs (scripts/bench.sh runs it): for every CSV file X.csv, X.png with one
column per pattern (one for alltoall): on top the time against the size of three lines --
`auto`, the MPI library's call (MPI_<Call>) and the best of our fixed algorithms at each size
(each point labelled with which) -- and below them auto's and our best's ratio to the MPI
library's call (below 1: faster). The points are verdict.py's (the same metric: by default the
median over iterations of the slowest rank's time).

    python3 benchmarks/plot_bench.py [--metric avg|median] [--all] X.csv [more.csv ...]

--all also writes X_all.png: every variant's line (colour and line style both vary, so that no
two lines look alike).
"""
import argparse
import itertools
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verdict  # noqa: E402

XLABEL = {"neighbor": "n (the pattern's size)"}


def label_axes(ax, coll, ylabel, sizes=None, xlabel=True):
    ax.set_xscale("log", base=2)
    if sizes:
        ticks = sorted(set(sizes))
        ticks = ticks[::(len(ticks) + 10) // 11]  # at most about 11 labels
        ax.set_xticks(ticks)
        ax.set_xticklabels([verdict.size_text(coll, t).replace("n=", "") for t in ticks],
                           fontsize=7)
        ax.minorticks_off()
    if xlabel:
        ax.set_xlabel(XLABEL.get(coll, "bytes per block"))
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)


def title(rows, pattern):
    r0 = rows[0]
    coll = r0.get("collective") or "alltoall"
    return f"{coll}{' ' + pattern if pattern else ''}, P={r0['P']}, {verdict.mpi_name(r0['mpi_library'])}"


def plot(path, metric):
    rows = verdict.load(path)
    if not rows:
        return None
    coll = rows[0].get("collective") or "alltoall"
    by_pattern = verdict.points(rows, metric)
    unit = "mean time (us)" if metric == "avg" else "median time, slowest rank (us)"
    # At most 3 patterns a row (4: 2 x 2); each pattern's time panel above its ratio panel.
    ncols = 2 if len(by_pattern) == 4 else min(3, len(by_pattern))
    blocks = (len(by_pattern) + ncols - 1) // ncols
    fig, axes = plt.subplots(2 * blocks, ncols, figsize=(6.5 * ncols, 7.5 * blocks),
                             squeeze=False, gridspec_kw={"height_ratios": [3, 1.4] * blocks})
    for i in range(len(by_pattern), blocks * ncols):
        axes[2 * (i // ncols)][i % ncols].set_visible(False)
        axes[2 * (i // ncols) + 1][i % ncols].set_visible(False)
    for i, (pattern, pts) in enumerate(by_pattern.items()):
        top, bottom = axes[2 * (i // ncols)][i % ncols], axes[2 * (i // ncols) + 1][i % ncols]
        top.sharex(bottom)
        x = [p.size for p in pts]
        base_name = next((p.base_name for p in pts if p.base_name), "MPI library")

        def line(ax, ys, **kw):
            xy = [(a, b) for a, b in zip(x, ys) if b is not None]
            if xy:
                ax.plot([a for a, _ in xy], [b for _, b in xy], marker="o", ms=4, **kw)

        line(top, [p.base for p in pts], color="black", ls="--", lw=2, label=base_name)
        line(top, [p.auto for p in pts], color="tab:red", lw=2.2, label="auto")
        line(top, [p.best for p in pts], color="tab:blue", lw=1.2, alpha=0.8,
             label="best of ours (fixed algorithm, labelled)")
        for p in pts:
            if p.best is not None:
                top.annotate(p.best_variant, (p.size, p.best), textcoords="offset points",
                             xytext=(3, -10), fontsize=6, color="tab:blue", rotation=-20)
        top.set_yscale("log")
        label_axes(top, coll, unit, x, xlabel=False)
        top.set_title(title(rows, pattern), fontsize=9)
        top.legend(fontsize=7)
        line(bottom, [p.ratio(p.auto) for p in pts], color="tab:red", lw=2, label="auto")
        line(bottom, [p.ratio(p.best) for p in pts], color="tab:blue", lw=1.2,
             label="best of ours")
        bottom.axhline(1, color="black", ls="--", lw=1)
        bottom.set_yscale("log")
        bottom.yaxis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
        bottom.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        bottom.yaxis.set_minor_formatter(ticker.NullFormatter())
        label_axes(bottom, coll, f"ratio to {base_name}", x)
        bottom.legend(fontsize=7)
    fig.tight_layout()
    out = os.path.splitext(path)[0] + ".png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def plot_all(path, metric):
    """Every variant's line, as the plots were before the three-line ones."""
    rows = verdict.load(path)
    if not rows:
        return None
    column = verdict.METRICS[metric]
    coll = rows[0].get("collective") or "alltoall"
    patterns = sorted({r.get("pattern", "") for r in rows})
    fig, axes = plt.subplots(1, len(patterns), figsize=(7.5 * len(patterns), 6), squeeze=False)
    # tab20 less its red (auto's)
    colours = [c for i, c in enumerate(plt.get_cmap("tab20").colors) if i != 6]
    for ax, pattern in zip(axes[0], patterns):
        series = {}
        for r in rows:
            if r.get("pattern", "") == pattern and r.get(column):
                series.setdefault(r["variant"], []).append((int(r["size"]), float(r[column])))
        # 19 colours x 4 line styles: no two of up to 76 lines alike.
        styles = itertools.product(["-", "--", "-.", ":"], colours)
        for name, pts in series.items():
            pts.sort()
            special = name == "auto" or name.startswith("MPI_")
            ls, colour = next(styles)
            if name == "auto":
                ls, colour = "-", "tab:red"
            elif name.startswith("MPI_"):
                ls, colour = (":" if name.endswith("_init") else "--"), "black"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], ls=ls, color=colour, marker="o",
                    ms=2.5, lw=2.2 if special else 1, label=name)
        ax.set_yscale("log")
        label_axes(ax, coll, column.replace("_", " "),
                   [p[0] for pts in series.values() for p in pts])
        ax.set_title(title(rows, pattern), fontsize=9)
        ax.legend(fontsize=5.5, ncol=2)
    fig.tight_layout()
    out = os.path.splitext(path)[0] + "_all.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--metric", choices=sorted(verdict.METRICS), default="median")
    ap.add_argument("--all", action="store_true", help="also X_all.png: every variant")
    ap.add_argument("csv", nargs="+")
    a = ap.parse_args(argv[1:])
    for path in a.csv:
        outs = [plot(path, a.metric)] + ([plot_all(path, a.metric)] if a.all else [])
        done = [o for o in outs if o]
        print(f"plot_bench.py: {', '.join(done) if done else 'nothing to plot in ' + path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
