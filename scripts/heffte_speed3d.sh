#!/usr/bin/env bash
# HeFFTe's speed3d_c2c with and without the drop-in library (LD_PRELOAD), side by side.
#
#   HEFFTE_BUILD=<heffte build dir> PRELOAD=<.../libmpi_advance_preload.so> \
#     bash scripts/heffte_speed3d.sh
#
# For every (ranks, size, reshape option) it runs speed3d_c2c REPS times *without* and REPS
# times *with* the preload, interleaved (without, with, without, with, ...), so that drifts of
# the machine hit both columns alike, and prints a markdown table of the medians: HeFFTe's
# "Time per run" (one forward + one backward transform / 2), its GFlops/s, the ratio
# with/without (< 1: the preload is faster), and the worst "Max error" seen (HeFFTe checks the
# round trip; a wrong all-to-all shows up there). Any failed or timed-out run is reported and
# makes the script exit non-zero. Docs: docs/heffte.md.
#
# Environment (defaults in brackets):
#   HEFFTE_BUILD   HeFFTe build (or install) tree holding benchmarks/speed3d_c2c   [required]
#   PRELOAD        path of libmpi_advance_preload.so                               [required]
#   MPIEXEC        launcher [mpirun.openmpi]; Open MPI gets -x, MPICH (hydra) -genv
#   NP_LIST        rank counts ["1 2 4"]
#   SIZES          cube edges ["64 128"] (N -> N x N x N, complex double)
#   RESHAPES       speed3d reshape options, "default" = none given ["-a2av -a2a"]
#                  (HeFFTe's default for FFTW *is* -a2av with -reorder: MPI_Alltoallv)
#   EXTRA_ARGS     more speed3d arguments for every run [""]
#   NRUNS          forward+backward pairs timed per run (speed3d -nrunsN) [20]
#   REPS           repetitions of each of the two columns [5]
#   RUN_TIMEOUT    seconds allowed to one run [300]
#   MPIX_ALLTOALLV / MPIX_ALLTOALL   algorithm of the preloaded runs [auto / auto]
#   SHOW_REPORT    1: finally run the last configuration once more with MPIX_REPORT=1 and
#                  print the library's report [1]
set -u -o pipefail

: "${HEFFTE_BUILD:?set HEFFTE_BUILD to the HeFFTe build directory}"
: "${PRELOAD:?set PRELOAD to libmpi_advance_preload.so}"
: "${MPIEXEC:=mpirun.openmpi}"
: "${NP_LIST:=1 2 4}"
: "${SIZES:=64 128}"
: "${RESHAPES:=-a2av -a2a}"
: "${EXTRA_ARGS:=}"
: "${NRUNS:=20}"
: "${REPS:=5}"
: "${RUN_TIMEOUT:=300}"
: "${MPIX_ALLTOALLV:=auto}"
: "${MPIX_ALLTOALL:=auto}"
: "${SHOW_REPORT:=1}"

exe=""
for c in "$HEFFTE_BUILD/benchmarks/speed3d_c2c" "$HEFFTE_BUILD/share/heffte/benchmarks/speed3d_c2c" \
         "$HEFFTE_BUILD/bin/speed3d_c2c" "$HEFFTE_BUILD/speed3d_c2c"; do
  [ -x "$c" ] && { exe="$c"; break; }
done
[ -n "$exe" ] || { echo "no speed3d_c2c under $HEFFTE_BUILD" >&2; exit 2; }
[ -r "$PRELOAD" ] || { echo "PRELOAD=$PRELOAD is not readable" >&2; exit 2; }
PRELOAD="$(cd "$(dirname "$PRELOAD")" && pwd)/$(basename "$PRELOAD")"
command -v "$MPIEXEC" >/dev/null || { echo "no launcher $MPIEXEC" >&2; exit 2; }

# Open MPI in a container / on a small machine (values already set win); harmless for MPICH.
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mpia_mpi_env

if "$MPIEXEC" --version 2>&1 | grep -qE 'Open MPI|OpenRTE'; then
  envflag() { printf -- '-x\n%s=%s\n' "$1" "$2"; }   # mpirun -x VAR=value
else
  envflag() { printf -- '-genv\n%s\n%s\n' "$1" "$2"; } # mpiexec (hydra) -genv VAR value
fi

# run <with: 0|1> <np> <size> <reshape> [VAR=value...]: one speed3d run. Sets LAST_LOG (its
# output), and RES to "time gflops maxerror", or to "FAIL <exit status>".
run() {
  local with="$1" np="$2" n="$3" reshape="$4" flags=() opt=() rc kv
  shift 4
  if [ "$with" = 1 ]; then
    mapfile -t flags < <(envflag LD_PRELOAD "$PRELOAD"; envflag MPIX_ALLTOALLV "$MPIX_ALLTOALLV"
                         envflag MPIX_ALLTOALL "$MPIX_ALLTOALL"
                         for kv in "$@"; do envflag "${kv%%=*}" "${kv#*=}"; done)
  fi
  [ "$reshape" = default ] || opt=("$reshape")
  # shellcheck disable=SC2086  # EXTRA_ARGS is a list of words
  LAST_LOG="$(timeout "$RUN_TIMEOUT" "$MPIEXEC" -n "$np" "${flags[@]}" "$exe" fftw double \
                "$n" "$n" "$n" "${opt[@]}" "-nruns$NRUNS" $EXTRA_ARGS 2>&1)"
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q '^Time per run:' <<<"$LAST_LOG" || grep -q '^ERROR' <<<"$LAST_LOG"
  then
    RES="FAIL $rc"
    return
  fi
  RES="$(awk '/^Time per run:/ {t=$4} /^Performance:/ {g=$2} /^Max error:/ {e=$3}
              END {print t, g, (e == "" ? "-" : e)}' <<<"$LAST_LOG")"
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2];
                                           else printf "%.6g\n", (a[NR/2]+a[NR/2+1])/2}'; }
maxerr() { grep -v '^-$' | sort -g | tail -1; }

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'; }
load_start="$(loadavg)"
failures=0
rows=()
ncpu="$(nproc 2>/dev/null || echo '?')"
echo "speed3d_c2c: $exe" >&2
echo "preload:     $PRELOAD (MPIX_ALLTOALLV=$MPIX_ALLTOALLV MPIX_ALLTOALL=$MPIX_ALLTOALL)" >&2
echo "launcher:    $MPIEXEC ($("$MPIEXEC" --version 2>&1 | head -1)), $ncpu cores" >&2
for np in $NP_LIST; do
  for n in $SIZES; do
    for reshape in $RESHAPES; do
      t0=(); g0=(); e0=(); t1=(); g1=(); e1=()
      for ((r = 1; r <= REPS; r++)); do
        for with in 0 1; do
          run "$with" "$np" "$n" "$reshape"
          read -r a b c <<<"$RES"
          if [ "$a" = FAIL ]; then
            failures=$((failures + 1))
            echo "FAILED (rc=$b): np=$np n=$n $reshape with=$with" >&2
            tail -20 <<<"$LAST_LOG" >&2
            continue
          fi
          if [ "$with" = 0 ]; then t0+=("$a"); g0+=("$b"); e0+=("$c")
          else t1+=("$a"); g1+=("$b"); e1+=("$c"); fi
        done
      done
      mt0="$(printf '%s\n' "${t0[@]}" | grep -v '^$' | median)"
      mt1="$(printf '%s\n' "${t1[@]}" | grep -v '^$' | median)"
      mg0="$(printf '%s\n' "${g0[@]}" | grep -v '^$' | median)"
      mg1="$(printf '%s\n' "${g1[@]}" | grep -v '^$' | median)"
      me="$(printf '%s\n' "${e0[@]}" "${e1[@]}" | grep -v '^$' | maxerr)"
      ratio="$(awk -v a="$mt1" -v b="$mt0" 'BEGIN {if (a+0 > 0 && b+0 > 0) printf "%.3f", a/b; else print "-"}')"
      over=""; [ "$np" -gt "$ncpu" ] 2>/dev/null && over=" (oversubscribed)"
      rows+=("| $np$over | ${n}^3 | $reshape | $mt0 | $mt1 | **$ratio** | $mg0 | $mg1 | ${#t0[@]}/${#t1[@]} | $me |")
      echo "done: np=$np n=$n $reshape: without $mt0 s, with $mt1 s" >&2
    done
  done
done

echo
echo "| P | size | reshape | time without (s) | time with (s) | with/without | GFlops without | GFlops with | runs | max error |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "Medians of $REPS interleaved runs each; speed3d_c2c fftw double, -nruns$NRUNS${EXTRA_ARGS:+ $EXTRA_ARGS};" \
     "time = HeFFTe's \"Time per run\"; with = LD_PRELOAD=$(basename "$PRELOAD")," \
     "MPIX_ALLTOALLV=$MPIX_ALLTOALLV MPIX_ALLTOALL=$MPIX_ALLTOALL; $ncpu cores," \
     "load average $load_start at the start, $(loadavg) at the end."

if [ "$SHOW_REPORT" = 1 ]; then
  echo
  echo "MPIX_REPORT=1 of one preloaded run (np=$np n=$n $reshape):"
  echo '```'
  run 1 "$np" "$n" "$reshape" MPIX_REPORT=1
  grep -v '^$' <<<"$LAST_LOG" | grep -vE '^(-{5,} *|heFFTe performance test)$'
  echo '```'
fi

[ "$failures" -eq 0 ] || { echo "$failures run(s) failed" >&2; exit 1; }
