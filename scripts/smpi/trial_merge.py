#!/usr/bin/python3
"""Merges scripts/smpi/trial.sh runs into one CSV per machine kind (issue #18).

    /usr/bin/python3 scripts/smpi/trial_merge.py OUT CSV...

Reads trial.sh's trial.csv files (platform, P, ppn, bytes, selection, time_us) in the order given:
a later row replaces an earlier one of the same (platform, P, bytes, selection), so a run of the
autos alone (TRIAL_AUTO_ONLY=1, after a change to the selection code) replaces the autos of an
earlier run and keeps its candidates (TRIAL_CANDIDATES_ONLY=1 runs). Writes OUT sorted by
platform, P, bytes, selection.
"""
import csv
import sys


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    rows = {}
    header = None
    for path in argv[2:]:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            header = header or reader.fieldnames
            for r in reader:
                rows[(r["platform"], int(r["P"]), int(r["bytes"]), r["selection"])] = r
    with open(argv[1], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        w.writeheader()
        for key in sorted(rows):
            w.writerow(rows[key])


if __name__ == "__main__":
    main(sys.argv)
