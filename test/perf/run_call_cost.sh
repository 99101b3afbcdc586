#!/usr/bin/env bash
# perf.call_cost: the library's instructions per call, counted by callgrind, against a committed
# budget (issue 38: 0.1 us a call crept into the blocking MPIX_Alltoall unnoticed).
#
#   run_call_cost.sh BUDGET OUTDIR PROGRAM MPIEXEC NUMPROC_FLAG [PREFLAG...]
#
# Runs PROGRAM (call_cost.cpp) on two ranks, rank 0 under callgrind. Per variant and block, the
# median over its dumps of the instructions outside the MPI library's entry points (a dump's
# total less the inclusive cost of its MPI_* / PMPI_* functions, as scripts/perf_persistent.sh's
# outside_MPI column) must not exceed the budget's figure. Timing plays no part: the count of
# one call whose peer's message is already in is the same at every run. MPIX_TRIAL_TIMES makes
# every trial settle on linear, so that what auto settles on (a measured choice) cannot move
# the count.
set -uo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
budget="$1" out="$2" prog="$3" mpiexec="$4" np_flag="$5"
shift 5
preflags=("$@")

rm -rf "$out" && mkdir -p "$out" || exit 1
export MPIX_TRIAL_TIMES='*=100,linear=10'
if ! "$mpiexec" "$np_flag" 1 "${preflags[@]}" valgrind --tool=callgrind --collect-atstart=no \
  --callgrind-out-file="$out/cg.out" "$prog" 3 : "$np_flag" 1 "$prog" 3 >"$out/run.log" 2>&1; then
  tail -n 30 "$out/run.log"
  echo "perf.call_cost: the run failed (log: $out/run.log)"
  exit 1
fi

mpia_callgrind_counts "$out" | awk '{ print $1, $2 - $3 }' >"$out/counts.txt"

awk -v budget_file="$budget" '
  function med(a, n,   i, j, t) {
    for (i = 2; i <= n; ++i) for (j = i; j > 1 && a[j-1] > a[j]; --j) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  BEGIN {
    while ((getline line < budget_file) > 0) {
      sub(/#.*/, "", line); if (split(line, f) < 2) continue
      want[f[1]] = f[2]; order[++nw] = f[1]
    }
  }
  { i = ++n[$1]; v[$1, i] = $2 }
  END {
    bad = 0
    printf "%-20s %10s %10s %7s\n", "variant@block", "instr", "budget", "of it"
    for (q = 1; q <= nw; ++q) {
      k = order[q]
      if (!(k in n)) { printf "%-20s %10s %10d  MISSING\n", k, "-", want[k]; bad = 1; continue }
      split("", a); for (i = 1; i <= n[k]; ++i) a[i] = v[k, i]
      m = med(a, n[k])
      over = m > want[k]
      printf "%-20s %10d %10d %6.0f%%%s\n", k, m, want[k], 100 * m / want[k], over ? "  OVER BUDGET" : ""
      if (over) bad = 1
    }
    if (bad) print "perf.call_cost: instructions per call over budget (or missing): see above; " \
                   "if the growth is wanted, raise the figure in " budget_file " and say why"
    exit bad
  }' "$out/counts.txt"
