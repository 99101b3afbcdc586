#!/usr/bin/env python3
"""Judges auto under noise (scripts/smpi/noise.sh's CSVs): per point, the settled auto's time
against the best candidate's and against the MPI library's own call, all timed in one
simulation under the same noise.

  python3 scripts/smpi/noise_report.py build/smpi/noise [--csv out.csv]

Times are mpia_bench's median_max_us (the median over the timed starts of the slowest rank's
time). "system" is the faster of SMPI's blocking call (the baseline MPI_<Call>) and the
`system` record (its nonblocking or persistent form): auto must not be more than 3 % slower than
either. "best" is the fastest candidate of ours (not auto, not system). Goals (issue 38): auto
within 5 % of best at >= 90 % of points, and never more than 3 % slower than system.

The timed auto is one more variant under the noise, with a spread of its own: where it settled on
an entry that was also timed as a candidate (or on `system`), the same code was timed twice, and
the two medians differ by what the judge cannot resolve. So a second judgement, of the choice:
the chosen entry's own row ("choice_us") against the best and against the `system` record -- the
MPI library's form a persistent request can be (SMPI has no persistent alltoall: its
nonblocking one). "twice" is auto's time over its choice's row: the judge's own noise.
"""
import argparse
import csv
import glob
import os
import sys


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", help="noise.sh output folders (one subfolder per kind)")
    ap.add_argument("--csv", help="also write the table as CSV")
    a = ap.parse_args()
    rows = []
    for d in a.dirs:
        for path in sorted(glob.glob(os.path.join(d, "*", "*.csv"))):
            kind = os.path.basename(os.path.dirname(path))
            data = load(path)
            if not data:
                continue
            t = {r["variant"]: float(r["median_max_us"]) for r in data if r["median_max_us"]}
            base = [v for v in t if v.startswith("MPI_")]
            systems = [t[v] for v in base + ["system"] if v in t]
            ours = {v: x for v, x in t.items() if v not in base and v not in ("system", "auto")}
            if "auto" not in t or not systems or not ours:
                continue
            best = min(ours, key=ours.get)
            r0 = data[0]
            chosen = next((r["chosen"] for r in data if r["variant"] == "auto"), "")
            choice = t.get(chosen, t["auto"]) if "|" not in chosen else t["auto"]
            form = t.get("system", min(systems))
            rows.append({
                "kind": kind, "collective": r0["collective"], "pattern": r0["pattern"],
                "P": r0["P"], "size": r0["size"], "auto_us": t["auto"], "chosen": chosen,
                "best": best, "best_us": ours[best], "system_us": min(systems),
                "auto_best": t["auto"] / ours[best], "auto_system": t["auto"] / min(systems),
                "choice_us": choice, "choice_best": choice / ours[best],
                "choice_form": choice / form, "twice": t["auto"] / choice,
            })
    if not rows:
        print("noise_report.py: no complete points", file=sys.stderr)
        return 2
    rows.sort(key=lambda r: (r["collective"], r["kind"], int(r["P"]), int(r["size"])))
    print(f"{'collective':<10} {'kind':<16} {'P':>5} {'size':>5} {'auto_us':>9} {'best':<34}"
          f" {'best_us':>8} {'sys_us':>8} {'a/best':>7} {'a/sys':>6} {'c/best':>6} {'c/form':>6}"
          f" {'twice':>6}  chosen")
    for r in rows:
        print(f"{r['collective']:<10} {r['kind']:<16} {r['P']:>5} {r['size']:>5} {r['auto_us']:>9.1f}"
              f" {r['best']:<34.34} {r['best_us']:>8.1f} {r['system_us']:>8.1f}"
              f" {r['auto_best']:>7.3f} {r['auto_system']:>6.3f} {r['choice_best']:>6.3f}"
              f" {r['choice_form']:>6.3f} {r['twice']:>6.3f}  {r['chosen']}")
    n = len(rows)
    near = sum(r["auto_best"] <= 1.05 for r in rows)
    safe = sum(r["auto_system"] <= 1.03 for r in rows)
    print(f"\n{n} points: auto within 5 % of the best candidate at {near} ({100 * near / n:.0f} %),"
          f" at most 3 % slower than the MPI library's call at {safe} ({100 * safe / n:.0f} %);"
          f" worst auto/best {max(r['auto_best'] for r in rows):.3f},"
          f" worst auto/system {max(r['auto_system'] for r in rows):.3f}")
    cnear = sum(r["choice_best"] <= 1.05 for r in rows)
    csafe = sum(r["choice_form"] <= 1.03 for r in rows)
    print(f"the choice, by its own row: within 5 % of the best at {cnear} ({100 * cnear / n:.0f} %),"
          f" at most 3 % slower than the `system` record at {csafe} ({100 * csafe / n:.0f} %);"
          f" worst {max(r['choice_best'] for r in rows):.3f} and"
          f" {max(r['choice_form'] for r in rows):.3f}; auto timed twice (auto / its choice's row)"
          f" {min(r['twice'] for r in rows):.3f}-{max(r['twice'] for r in rows):.3f}")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
