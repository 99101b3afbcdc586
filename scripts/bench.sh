#!/usr/bin/env bash
# scripts/bench.sh -- install the prerequisites, build mpi-advance (Release) against each MPI
# flavour and run the all-to-all benchmark (mpia_bench) at a few process counts.
#
#   bash scripts/bench.sh
#
# Writes results/alltoall_<flavour>_P<P>.csv (and .log) and prints the tables. Three to ten
# minutes on a 2-core machine (depending on its load) once scripts/setup.sh has installed
# the packages.
#
# Environment (all optional):
#   MPIA_BENCH_FLAVOURS   MPI flavours, space or comma separated (default "openmpi mpich")
#   MPIA_BENCH_NP_OPENMPI process counts for Open MPI (default "2 16"; more ranks than cores
#                         run oversubscribed, with yield-when-idle)
#   MPIA_BENCH_NP_MPICH   process counts for MPICH (default "2"; MPICH busy-polls when
#                         oversubscribed, 8-32 ms per collective: "2 4" at most, and read the
#                         oversubscribed numbers as scheduling noise)
#   MPIA_BENCH_SIZES      block sizes in bytes, comma separated (default: mpia_bench's own,
#                         1,8,64,512,4096,32768)
#   MPIA_BENCH_ARGS_DEDICATED  mpia_bench options when P <= cores
#                         (default "--rounds 10 --iters 2000")
#   MPIA_BENCH_ARGS_OVERSUB    mpia_bench options when P > cores, oversubscribed, Open MPI
#                         (default "--rounds 5 --iters 200 --warmup 3")
#   MPIA_BENCH_ARGS_OVERSUB_MPICH  the same for MPICH (default "--rounds 2 --iters 10 --warmup 1")
#   MPIA_BENCH_ARGS       extra mpia_bench options for every run (e.g. "--variants tra:*")
#   MPIA_BENCH_TIMEOUT    seconds one mpirun may take before it is killed (default 600)
#   MPIA_SKIP_SETUP=1     do not run scripts/setup.sh (packages already installed)
#   MPIA_JOBS             parallel build jobs (default 2)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

if [ "${MPIA_SKIP_SETUP:-0}" != 1 ]; then
  if [ ! -f scripts/setup.sh ]; then
    echo "bench.sh: scripts/setup.sh is missing" >&2
    exit 1
  fi
  bash scripts/setup.sh || { echo "bench.sh: scripts/setup.sh failed" >&2; exit 1; }
fi

# shellcheck source=common.sh
. scripts/common.sh
mpia_mpi_env

NCORES="$(nproc 2>/dev/null || echo 2)"
TIMEOUT="${MPIA_BENCH_TIMEOUT:-600}"
DEDICATED_ARGS="${MPIA_BENCH_ARGS_DEDICATED:---rounds 10 --iters 2000}"
OVERSUB_ARGS="${MPIA_BENCH_ARGS_OVERSUB:---rounds 5 --iters 200 --warmup 3}"
OVERSUB_ARGS_MPICH="${MPIA_BENCH_ARGS_OVERSUB_MPICH:---rounds 2 --iters 10 --warmup 1}"
read -r -a EXTRA_ARGS <<<"${MPIA_BENCH_ARGS:-}"
SIZE_ARGS=()
[ -n "${MPIA_BENCH_SIZES:-}" ] && SIZE_ARGS=(--sizes "$MPIA_BENCH_SIZES")

mkdir -p results
failures=()
logs=()
ran=0
t_start=$SECONDS

for flavour in ${MPIA_BENCH_FLAVOURS:-openmpi mpich}; do
  flavour="${flavour//,/}"
  [ -n "$flavour" ] || continue
  mpia_check_flavour "$flavour" || { failures+=("$flavour: unknown flavour"); continue; }
  if ! mpia_have_flavour "$flavour"; then
    mpia_log "$flavour is not installed; skipping it"
    failures+=("$flavour: not installed")
    continue
  fi

  # A Release build of the library and the benchmark only, in its own directory
  # (build/<flavour>-release) so that the test builds in build/<flavour> keep their settings.
  dir="$(mpia_build_dir "$flavour" release)"
  blog="results/build_$flavour.log"
  mpia_log "configure + build $flavour (Release) in ${dir#"$ROOT"/} (log: $blog)"
  if ! cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
        -DMPI_C_COMPILER="$(command -v "$(mpia_mpicc "$flavour")")" \
        -DMPI_CXX_COMPILER="$(command -v "$(mpia_mpicxx "$flavour")")" \
        -DMPIEXEC_EXECUTABLE="$(command -v "$(mpia_mpiexec "$flavour")")" \
        -DMPIA_BUILD_TESTS=OFF -DMPIA_BUILD_BENCHMARKS=ON >"$blog" 2>&1 ||
     ! cmake --build "$dir" -j "$MPIA_JOBS" --target mpia_bench >>"$blog" 2>&1; then
    tail -n 40 "$blog" >&2
    mpia_log "build with $flavour failed (full log: $blog)"
    failures+=("$flavour: build failed")
    continue
  fi
  bench="$dir/benchmarks/mpia_bench"

  case "$flavour" in
    openmpi) nps="${MPIA_BENCH_NP_OPENMPI:-2 16}"; launcher=("$(mpia_mpiexec openmpi)" --oversubscribe) ;;
    mpich)   nps="${MPIA_BENCH_NP_MPICH:-2}";      launcher=("$(mpia_mpiexec mpich)") ;;
  esac

  for np in $nps; do
    if [ "$np" -gt "$NCORES" ] && [ "$flavour" = mpich ]; then
      read -r -a args <<<"$OVERSUB_ARGS_MPICH"
    elif [ "$np" -gt "$NCORES" ]; then
      read -r -a args <<<"$OVERSUB_ARGS"
    else
      read -r -a args <<<"$DEDICATED_ARGS"
    fi
    csv="results/alltoall_${flavour}_P${np}.csv"
    log="results/alltoall_${flavour}_P${np}.log"
    cmd=("${launcher[@]}" -n "$np" "$bench" "${SIZE_ARGS[@]}" "${args[@]}" "${EXTRA_ARGS[@]}"
         --csv "$csv")
    echo
    echo "=== $flavour, P=$np$([ "$np" -gt "$NCORES" ] && echo " (oversubscribed on $NCORES cores)")"
    echo "=== ${cmd[*]}"
    t0=$SECONDS
    timeout --signal=TERM --kill-after=10 "$TIMEOUT" "${cmd[@]}" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    echo "=== $flavour, P=$np: exit $rc after $((SECONDS - t0)) s; results in $csv"
    if [ "$rc" -ne 0 ]; then
      [ "$rc" -eq 124 ] && echo "=== TIMED OUT after $TIMEOUT s" >&2
      failures+=("$flavour P=$np: exit $rc (see $log)")
    else
      ran=$((ran + 1))
      logs+=("$log")
    fi
  done
done

# All summaries together (each log ends with mpia_bench's summary table).
for log in "${logs[@]}"; do
  echo
  echo "=== ${log%.log}"
  sed -n '/^# summary/,$p' "$log"
done

echo
echo "bench.sh: $ran benchmark run(s) completed in $((SECONDS - t_start)) s; results in results/"
if [ "${#failures[@]}" -gt 0 ]; then
  printf 'bench.sh: FAILED: %s\n' "${failures[@]}" >&2
  exit 1
fi
exit 0
