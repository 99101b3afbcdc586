#!/usr/bin/env bash
# Runs an unmodified Fortran MPI program under libmpi_advance_preload.so and checks, besides its
# PASS line, the MPIX_REPORT lines the preload prints at MPI_Finalize (rank 0 of
# MPI_COMM_WORLD):
#
#   mpi-advance: <collective> ranks=<n> calls=<c> bytes=<b> algorithm=<name> time=<t>s cache_hits=<h>
#
#   run_fortran.sh <mpiexec> <np> <preload.so> <program> <collective>=<calls>...
#
# For each <collective>=<calls>, the calls on <np>-rank communicators must add up to <calls>,
# all of them run by one of the library's algorithms: a line of that collective with
# algorithm=system (the call went to the MPI library) or "?" fails. So does a run where the
# preload was not loaded or did not see the Fortran calls (no lines, or too few calls).
# The preload is given to the ranks only (Open MPI: -x; MPICH's hydra: -genv), with
# MPIX_REPORT=1 and every MPIX_* variable of the environment.
set -uo pipefail
if [ $# -lt 5 ]; then
  echo "usage: run_fortran.sh <mpiexec> <np> <preload.so> <program> <collective>=<calls>..." >&2
  exit 2
fi
mpiexec="$1" np="$2" preload="$3" program="$4"
shift 4
export MPIX_REPORT=1
[ -f "$preload" ] || { echo "FAIL: no preload library $preload" >&2; exit 1; }

flags=()
if "$mpiexec" --version 2>&1 | grep -q "Open MPI\|OpenRTE"; then
  flags+=(--oversubscribe -x "LD_PRELOAD=$preload")
  for v in $(compgen -e | grep '^MPIX_'); do flags+=(-x "$v"); done
else
  flags+=(-genv LD_PRELOAD "$preload")
fi
out="$(timeout "${PRELOAD_TIMEOUT:-280}" "$mpiexec" -n "$np" "${flags[@]}" "$program" 2>&1)"
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: the program exited with $rc" >&2; exit 1; }
grep -q '^PASS$' <<<"$out" || { echo "FAIL: no PASS line" >&2; exit 1; }

status=0
for want in "$@"; do
  name="${want%%=*}" calls="${want#*=}"
  # Sum of the library's calls, and the lines that are not the library's.
  read -r got other < <(printf '%s\n' "$out" | awk -v name="$name" -v np="$np" '
    $1 == "mpi-advance:" && $2 == name && $3 == "ranks=" np {
      c = $4; sub(/^calls=/, "", c)
      alg = $0; sub(/.* algorithm=/, "", alg); sub(/ time=.*/, "", alg)
      if (alg ~ /^system \(MPI library\)/ || alg !~ /^[a-z]/) other += c; else got += c
    }
    END { printf "%d %d\n", got, other }')
  if [ "$got" -ne "$calls" ] || [ "$other" -ne 0 ]; then
    echo "FAIL: $name at ranks=$np: $got calls ran on mpi-advance, $other went elsewhere;" \
         "want $calls on mpi-advance" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "run_fortran.sh: PASS"
exit "$status"
