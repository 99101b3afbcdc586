#!/usr/bin/env python3
"""Plots of mpia_bench CSVs (scripts/bench.sh runs it): for every CSV file X.csv, X.png with one
panel per pattern (one for alltoall) showing med_max (the median over iterations of the slowest
rank, microseconds) against the size, one line per variant; the MPI library's calls dashed.

    python3 benchmarks/plot_bench.py results/alltoall_openmpi_P2.csv [more.csv ...]
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("iters", "0") not in ("", "0")]
    if not rows:
        return None
    patterns = sorted({r.get("pattern", "") for r in rows})
    fig, axes = plt.subplots(1, len(patterns), figsize=(6.5 * len(patterns), 5), squeeze=False)
    for ax, pat in zip(axes[0], patterns):
        series = {}
        for r in rows:
            if r.get("pattern", "") == pat:
                series.setdefault(r["variant"], []).append((int(r["size"]), float(r["median_max_us"])))
        for name, pts in series.items():
            pts.sort()
            style = "--" if name.startswith("MPI_") else "-"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", ms=3,
                    lw=2 if name == "auto" or name.startswith("MPI_") else 1,
                    label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("size (n for neighbor patterns, else bytes per block)")
        ax.set_ylabel("med_max (us)")
        r0 = rows[0]
        ax.set_title(f"{r0.get('collective', 'alltoall')} {pat} P={r0['P']}".replace("  ", " "))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    fig.suptitle(rows[0]["mpi_library"][:90], fontsize=8)
    fig.tight_layout()
    out = os.path.splitext(path)[0] + ".png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    for path in argv[1:]:
        out = plot(path)
        print(f"plot_bench.py: {out or 'nothing to plot in ' + path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
