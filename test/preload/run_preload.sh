#!/usr/bin/env bash
# Runs an unmodified MPI program under libmpi_advance_preload.so and checks the MPIX_REPORT
# lines the preload prints at MPI_Finalize (so a run where the preload was not loaded, or did
# not intercept, fails even when the program's own checks pass).
#
#   run_preload.sh <mpiexec> <np> <preload.so> <program> [--expect <ERE>]... [--reject <ERE>]...
#                  [-- <env VAR=value>...]
#
# Every --expect regular expression must match a line of the output, no --reject one any. The preload is given to
# the ranks only (Open MPI: -x; MPICH's hydra: -genv), with MPIX_REPORT=1 and every MPIX_*
# variable of the environment.
set -uo pipefail
mpiexec="$1" np="$2" preload="$3" program="$4"
shift 4
expects=()
rejects=()
while [ $# -gt 0 ]; do
  case "$1" in
    --expect) expects+=("$2"); shift 2 ;;
    --reject) rejects+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "run_preload.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for kv in "$@"; do export "${kv?}"; done
export MPIX_REPORT="${MPIX_REPORT:-1}"
IFS=: read -r -a libs <<<"$preload"
for l in "${libs[@]}"; do [ -f "$l" ] || { echo "FAIL: no preload library $l" >&2; exit 1; }; done

flags=()
if "$mpiexec" --version 2>&1 | grep -q "Open MPI\|OpenRTE"; then
  flags+=(--oversubscribe -x "LD_PRELOAD=$preload")
  for v in $(compgen -e | grep '^MPIX_'); do flags+=(-x "$v"); done
else
  flags+=(-genv LD_PRELOAD "$preload")
fi
out="$(timeout ${PRELOAD_TIMEOUT:-280} "$mpiexec" -n "$np" "${flags[@]}" "$program" 2>&1)"
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: the program exited with $rc" >&2; exit 1; }
for e in "${expects[@]}"; do
  grep -Eq -- "$e" <<<"$out" || { echo "FAIL: no output line matches: $e" >&2; exit 1; }
done
for e in "${rejects[@]}"; do
  ! grep -Eq -- "$e" <<<"$out" || { echo "FAIL: an output line matches: $e" >&2; exit 1; }
done
echo "run_preload.sh: PASS"
