#!/usr/bin/python3
"""Plots and a summary table of the simulated sweep (scripts/smpi/sweep.sh).

    /usr/bin/python3 scripts/smpi/plot.py [CSV] [OUTDIR]

CSV defaults to docs/results/smpi/sweep.csv, OUTDIR to the CSV's directory. Writes, per
platform:
  tra_radix_<platform>_P<P>.png   tra: time vs radix, one line per block size (sqrt(P) marked)
  tra2_<platform>_P<P>.png        tra2: time vs radix_inter, one line per radix_intra, one
                                  panel per block size
  vs_baselines_<platform>.png     best of ours, auto, SMPI's ompi and mpich selections vs P,
                                  one panel per block size
  summary_<platform>.md           the table: best (selection, us), auto (pick, us), auto/best,
                                  peers = the faster of SMPI's ompi/mpich selections, best/peers,
                                  auto/peers
Times are the CSV's time_us (the median over iterations of the slowest rank's time).
Needs matplotlib (Debian: python3-matplotlib); draws with the Agg backend (no display).
"""
import csv
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            r["P"] = int(r["P"])
            r["block_bytes"] = int(r["block_bytes"])
            r["time_us"] = float(r["time_us"])
            rows.append(r)
    return rows


def params(sel):
    """'tra2:radix_intra=2,radix_inter=4' -> ('tra2', {'radix_intra': 2, 'radix_inter': 4})."""
    name, _, rest = sel.partition(":")
    out = {}
    for kv in rest.split(","):
        k, eq, v = kv.partition("=")
        if eq:
            try:
                out[k] = int(v)
            except ValueError:
                out[k] = v
    return name, out


def size_label(b):
    return f"{b // 1024} KiB" if b >= 1024 and b % 1024 == 0 else f"{b} B"


def plot_tra(rows, platform, outdir):
    by_p = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        name, p = params(r["selection"])
        if r["kind"] == "ours" and name == "tra" and "radix" in p:
            by_p[r["P"]][r["block_bytes"]][p["radix"]] = r["time_us"]
    written = []
    for P, sizes in sorted(by_p.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for b, pts in sorted(sizes.items()):
            xs = sorted(pts)
            ys = [pts[x] for x in xs]
            line, = ax.plot(xs, ys, marker="o", ms=3, label=size_label(b))
            best = min(xs, key=lambda x: pts[x])
            ax.plot([best], [pts[best]], marker="*", ms=12, color=line.get_color())
        ax.axvline(math.sqrt(P), color="grey", ls=":", lw=1, label="sqrt(P)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("radix r")
        ax.set_ylabel("time (us, simulated)")
        ax.set_title(f"tra: time vs radix, P={P} ({platform}, 16 ranks/node); * = best")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        f = os.path.join(outdir, f"tra_radix_{platform}_P{P}.png")
        fig.savefig(f, dpi=110)
        plt.close(fig)
        written.append(f)
    return written


def plot_tra2(rows, platform, outdir):
    by_p = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for r in rows:
        name, p = params(r["selection"])
        if r["kind"] == "ours" and name == "tra2" and "radix_intra" in p and "radix_inter" in p:
            by_p[r["P"]][r["block_bytes"]][p["radix_intra"]][p["radix_inter"]] = r["time_us"]
    written = []
    for P, sizes in sorted(by_p.items()):
        n = len(sizes)
        cols = min(n, 2)
        nrows = (n + cols - 1) // cols
        fig, axes = plt.subplots(nrows, cols, figsize=(6 * cols, 4 * nrows), squeeze=False)
        for ax, (b, intra) in zip(axes.flat, sorted(sizes.items())):
            best = min(((t, a, e) for a, d in intra.items() for e, t in d.items()))
            for a, d in sorted(intra.items()):
                xs = sorted(d)
                ax.plot(xs, [d[x] for x in xs], marker="o", ms=3, label=f"radix_intra={a}")
            ax.plot([best[2]], [best[0]], marker="*", ms=14, color="black",
                    label=f"best ({best[1]},{best[2]}) {best[0]:.1f} us")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("radix_inter")
            ax.set_ylabel("time (us)")
            ax.set_title(f"tra2, P={P}, {size_label(b)} blocks")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        for ax in list(axes.flat)[n:]:
            ax.set_visible(False)
        fig.suptitle(f"tra2: time vs radix pair ({platform}, {P // 16} nodes x 16)")
        fig.tight_layout()
        f = os.path.join(outdir, f"tra2_{platform}_P{P}.png")
        fig.savefig(f, dpi=110)
        plt.close(fig)
        written.append(f)
    return written


def table(rows):
    """{(P, block): dict(best=(us, algorithm), auto=(us, pick), ompi=us, mpich=us)}"""
    cells = defaultdict(dict)
    for r in rows:
        key = (r["P"], r["block_bytes"])
        c = cells[key]
        if r["kind"] == "ours":
            if r["selection"] == "auto":
                c["auto"] = (r["time_us"], r["algorithm"])
            # auto's pick is one of ours too (when the grid lacks its parameters, it is the best)
            if "best" not in c or r["time_us"] < c["best"][0]:
                c["best"] = (r["time_us"], r["algorithm"])
        elif r["selection"] in ("smpi:ompi", "smpi:mpich"):
            c[r["selection"][5:]] = r["time_us"]
    return cells


def plot_vs(rows, platform, outdir):
    cells = table(rows)
    sizes = sorted({b for (_, b) in cells})
    if not sizes:
        return []
    cols = min(len(sizes), 2)
    nrows = (len(sizes) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(6 * cols, 4 * nrows), squeeze=False)
    for ax, b in zip(axes.flat, sizes):
        ps = sorted(P for (P, bb) in cells if bb == b)
        for label, get, style in (
            ("best of ours", lambda c: c.get("best", (None,))[0], "o-"),
            ("auto", lambda c: c.get("auto", (None,))[0], "s--"),
            ("SMPI ompi", lambda c: c.get("ompi"), "^-"),
            ("SMPI mpich", lambda c: c.get("mpich"), "v-"),
        ):
            pts = [(P, get(cells[(P, b)])) for P in ps]
            pts = [(x, y) for x, y in pts if y is not None]
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], style, ms=5, label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("P (ranks)")
        ax.set_ylabel("time (us)")
        ax.set_title(f"{size_label(b)} blocks")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(sizes):]:
        ax.set_visible(False)
    fig.suptitle(f"persistent alltoall: ours vs SMPI's selections ({platform}, 16 ranks/node)")
    fig.tight_layout()
    f = os.path.join(outdir, f"vs_baselines_{platform}.png")
    fig.savefig(f, dpi=110)
    plt.close(fig)
    return [f]


def summary(rows, platform, outdir):
    cells = table(rows)
    lines = [
        f"Simulated persistent alltoall, {platform} platform (scripts/smpi/platform.env), "
        "time in us (median over iterations of the slowest rank); peers = the faster of SMPI's "
        "ompi and mpich selections.",
        "",
        "| P | block | best of ours | us | auto picks | us | auto / best | peers us | best / peers | auto / peers |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (P, b), c in sorted(cells.items()):
        best = c.get("best")
        auto = c.get("auto")
        peers = [c[k] for k in ("ompi", "mpich") if k in c]
        peer = min(peers) if peers else None

        def ratio(x, y):
            return f"{x / y:.2f}" if x is not None and y else "-"

        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            P, size_label(b),
            best[1] if best else "-", f"{best[0]:.1f}" if best else "-",
            auto[1] if auto else "-", f"{auto[0]:.1f}" if auto else "-",
            ratio(auto[0] if auto else None, best[0] if best else None),
            f"{peer:.1f}" if peer is not None else "-",
            ratio(best[0] if best else None, peer),
            ratio(auto[0] if auto else None, peer)))
    f = os.path.join(outdir, f"summary_{platform}.md")
    with open(f, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return [f]


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    default = os.path.join(root, "docs", "results", "smpi", "sweep.csv")
    path = sys.argv[1] if len(sys.argv) > 1 else default
    outdir = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(path))
    os.makedirs(outdir, exist_ok=True)
    rows = load(path)
    written = []
    for platform in sorted({r["platform"] for r in rows}):
        sub = [r for r in rows if r["platform"] == platform]
        written += plot_tra(sub, platform, outdir)
        written += plot_tra2(sub, platform, outdir)
        written += plot_vs(sub, platform, outdir)
        written += summary(sub, platform, outdir)
    for f in written:
        print("plot.py: wrote", f)


if __name__ == "__main__":
    main()
