#!/usr/bin/env bash
# ctest tools.mpia_tune (and the installed-package test): mpia_tune measures at 4 ranks on two
# emulated nodes, writes a tuning file the library reads without a warning, and its fit is the
# one scripts/calibrate.py (numpy's least squares, written apart) finds on the same CSV; --help,
# a bad option and a single rank exit as documented.
#   MPIEXEC="mpiexec [flags]" bash tools/test_mpia_tune.sh MPIA_TUNE MPIA_INFO [MPIA_MODEL]
set -u
tune="$1" info="$2" model="${3:-}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
read -r -a launch <<<"${MPIEXEC:-mpiexec}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export TMPDIR="$tmp"  # Open MPI's session directory: its own, as every test's (test/CMakeLists.txt)
# shellcheck source=tools/check.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/check.sh"
quick=(--sizes 8,512 --iters 3 --rounds 2 --warmup 1)
check help 0 'usage: mpiexec -n P mpia_tune' -- "${launch[@]}" -n 1 "$tune" --help
check bad-option 2 'unknown option --frobnicate' -- "${launch[@]}" -n 2 "$tune" --frobnicate
check one-rank 1 'needs at least 2 ranks' -- "${launch[@]}" -n 1 "$tune"
check measure 0 'auto after' -- env MPIX_LOCALITY=ppn:2 "${launch[@]}" -n 4 "$tune" "${quick[@]}" \
  --output "$tmp/tuning.txt" --csv "$tmp/measured.csv"
# Two nodes: tra2 measured, and 6 selections (tra2 at its defaults is 2,2 here) + MPI_Alltoall at 2 sizes in the CSV.
check csv 0 '^14$' -- bash -c "tail -n +2 '$tmp/measured.csv' | wc -l"
check csv-tra2 0 'tra2:radix_intra=2,radix_inter=2' -- cat "$tmp/measured.csv"
check model-line 0 '^model o_intra=' -- cat "$tmp/tuning.txt"
# The library reads the file as it is (no "skipped" line) and auto follows it.
check file-reads 0 'auto: ' -- "$info" --rank --collective alltoall --nranks 4 --ppn 2 --bytes 8 \
  --tuning "$tmp/tuning.txt"
if "$info" --rank --collective alltoall --nranks 4 --ppn 2 --bytes 8 --tuning "$tmp/tuning.txt" 2>&1 |
  grep -q skipped; then
  echo "FAIL file-warns: the library skips part of the tuning file mpia_tune wrote"
  fails=$((fails + 1))
fi
check also 0 'fit: 24 points' -- env MPIX_LOCALITY=ppn:2 "${launch[@]}" -n 4 "$tune" "${quick[@]}" \
  --output "$tmp/tuning2.txt" --also "$tmp/measured.csv"
check fix 0 'bw_copy=0,' -- env MPIX_LOCALITY=ppn:2 "${launch[@]}" -n 4 "$tune" "${quick[@]}" \
  --output "$tmp/tuning3.txt" --fix bw_copy=0,g_inflight=0
# The same fit as calibrate.py's on the CSV (needs numpy and mpia_model: the build tree's).
if [ -n "$model" ] && [ -x "$model" ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  /usr/bin/python3 "$here/../scripts/calibrate.py" fit --model-tool "$model" "$tmp/measured.csv" \
    >"$tmp/py.txt" 2>&1
  check same-fit 0 'same' -- /usr/bin/python3 -c '
import sys
def model(path):
    for l in open(path):
        if l.startswith("model "):
            return dict((k, float(v)) for k, v in (kv.split("=") for kv in l.split()[1].split(",")))
a, b = model(sys.argv[1]), model(sys.argv[2])
# Constants one node cannot tell are kept by mpia_tune and zeroed by calibrate.py: compare the
# others (on two emulated nodes every one is told, but a constant the fit leaves at 0 is 0 in both).
bad = [k for k in a if abs(a[k] - b[k]) > 2e-3 * max(abs(a[k]), abs(b[k]), 1e-300)]
print("same" if not bad else "differ: %s\n%s\n%s" % (bad, a, b))
' "$tmp/tuning.txt" "$tmp/py.txt"
else
  echo "(no numpy or mpia_model: the comparison with calibrate.py skipped)"
fi
[ "$fails" -eq 0 ] && echo "mpia_tune: PASS" && exit 0
echo "mpia_tune: $fails failed"
exit 1
