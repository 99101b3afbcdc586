#!/usr/bin/env bash
# scripts/bench.sh -- install the prerequisites, build mpi-advance (Release) against each MPI
# flavour and run the all-to-all benchmark (mpia_bench) at a few process counts, then the
# all-to-all-v benchmark (mpia_bench_v: count patterns, windows, radices), its imbalance mode
# (Open MPI) and, when it was built (FFTW found), the 3-D FFT mini-app (mpia_fft3d, Open MPI).
#
#   bash scripts/bench.sh
#
# Writes results/alltoall_<flavour>_P<P>.csv, results/alltoallv_<flavour>_P<P>.csv,
# results/imbalance_openmpi_P<P>.csv, results/fft3d_openmpi_P<P>.csv,
# results/neighbor_<flavour>_P<P>.csv (neighbor all-to-all-v: stencils and sparse matrices,
# mpia_bench_neighbor, when it is configured), results/overlap_<flavour>_P<P>.csv (Start /
# compute / Wait with and without the progress thread, mpia_bench_overlap) (each with a .log)
# and prints the tables. Five to fifteen minutes on a 2-core machine (depending on its load) once
# scripts/setup.sh has installed the packages.
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
#   MPIA_BENCH_V_NP_OPENMPI / MPIA_BENCH_V_NP_MPICH  process counts of mpia_bench_v
#                         (default "2 16" / "2"; "" skips)
#   MPIA_BENCH_V_SIZES    average block sizes of mpia_bench_v (default its own, 8,512,8192)
#   MPIA_BENCH_V_ARGS_DEDICATED  mpia_bench_v options when P <= cores
#                         (default "--rounds 5 --iters 1000 --warmup 10")
#   MPIA_BENCH_V_ARGS_OVERSUB    the same when P > cores, Open MPI
#                         (default "--rounds 2 --iters 20 --warmup 2")
#   MPIA_BENCH_V_ARGS_OVERSUB_MPICH  the same for MPICH (default "--rounds 1 --iters 5 --warmup 1")
#   MPIA_BENCH_V_ARGS     extra mpia_bench_v options for every run (e.g. "--patterns sparse")
#   MPIA_BENCH_IMBALANCE  maximal per-rank delay in us of the imbalance run (default 200; 0 skips)
#   MPIA_BENCH_IMBALANCE_NP     its process count, Open MPI (default 16)
#   MPIA_BENCH_IMBALANCE_ARGS   its options (default "--sizes 8,8192 --rounds 2 --iters 20
#                         --warmup 2")
#   MPIA_BENCH_FFT_NP     process counts of the FFT mini-app, Open MPI (default "4"; "" skips)
#   MPIA_BENCH_FFT_ARGS   its options (default "--n 32 --iters 3 --backends system,pairwise,
#                         linear,multipair_waitany,multipair_testany,bruck,auto")
#   MPIA_BENCH_NEIGHBOR_NP_OPENMPI / MPIA_BENCH_NEIGHBOR_NP_MPICH  process counts of the
#                         neighbor all-to-all benchmark mpia_bench_neighbor (default "2 16" / "2";
#                         "" skips); results/neighbor_<flavour>_P<P>.csv
#   MPIA_BENCH_NEIGHBOR_PPN    ranks per emulated node (MPIX_LOCALITY=ppn:K) of its runs, at
#                         most P/2 so that there are at least two nodes (default 4)
#   MPIA_BENCH_NEIGHBOR_SIZES  its sizes n, comma separated (default its own, 8,32,128)
#   MPIA_BENCH_NEIGHBOR_ARGS_DEDICATED  its options when P <= cores
#                         (default "--iters 300 --warmup 20")
#   MPIA_BENCH_NEIGHBOR_ARGS_OVERSUB    the same when P > cores, Open MPI
#                         (default "--iters 40 --warmup 4")
#   MPIA_BENCH_NEIGHBOR_ARGS_OVERSUB_MPICH  the same for MPICH (default "--iters 5 --warmup 1")
#   MPIA_BENCH_NEIGHBOR_ARGS   extra options for every run (e.g. "--patterns stencil3d")
#   MPIA_BENCH_OVERLAP_NP_OPENMPI / MPIA_BENCH_OVERLAP_NP_MPICH  process counts of the overlap
#                         benchmark mpia_bench_overlap (Start / compute / Wait with and without
#                         the progress thread; default "2" each, a few seconds; "" skips);
#                         results/overlap_<flavour>_P<P>.csv
#   MPIA_BENCH_OVERLAP_ARGS    its options (default: its own, bruck,tra at 4k,64k,512k)
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

V_DEDICATED_ARGS="${MPIA_BENCH_V_ARGS_DEDICATED:---rounds 5 --iters 1000 --warmup 10}"
V_OVERSUB_ARGS="${MPIA_BENCH_V_ARGS_OVERSUB:---rounds 2 --iters 20 --warmup 2}"
V_OVERSUB_ARGS_MPICH="${MPIA_BENCH_V_ARGS_OVERSUB_MPICH:---rounds 1 --iters 5 --warmup 1}"
read -r -a V_EXTRA_ARGS <<<"${MPIA_BENCH_V_ARGS:-}"
V_SIZE_ARGS=()
[ -n "${MPIA_BENCH_V_SIZES:-}" ] && V_SIZE_ARGS=(--sizes "$MPIA_BENCH_V_SIZES")

mkdir -p results
failures=()
logs=()
ran=0
t_start=$SECONDS

# run_bench FLAVOUR NP NAME COMMAND...: run one benchmark under the timeout, tee its output to
# results/NAME.log, record a failure or the log.
run_bench() {
  local flavour="$1" np="$2" name="$3" rc t0
  shift 3
  local log="results/$name.log"
  echo
  echo "=== $name: $flavour, P=$np$([ "$np" -gt "$NCORES" ] && echo " (oversubscribed on $NCORES cores)")"
  echo "=== $*"
  t0=$SECONDS
  timeout --signal=TERM --kill-after=10 "$TIMEOUT" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  echo "=== $name: exit $rc after $((SECONDS - t0)) s; log in $log"
  if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 124 ] && echo "=== TIMED OUT after $TIMEOUT s" >&2
    failures+=("$name: exit $rc (see $log)")
  else
    ran=$((ran + 1))
    logs+=("$log")
  fi
}

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
     ! cmake --build "$dir" -j "$MPIA_JOBS" --target mpia_bench mpia_bench_v >>"$blog" 2>&1; then
    tail -n 40 "$blog" >&2
    mpia_log "build with $flavour failed (full log: $blog)"
    failures+=("$flavour: build failed")
    continue
  fi
  bench="$dir/benchmarks/mpia_bench"
  bench_v="$dir/benchmarks/mpia_bench_v"
  # The FFT mini-app is optional (it needs FFTW): build it when CMake defined its target.
  if [ "$flavour" = openmpi ] && [ -n "${MPIA_BENCH_FFT_NP-4}" ] &&
     [ -f "$ROOT/benchmarks/fft3d/CMakeLists.txt" ]; then
    # (not "| grep -q": under pipefail an early grep exit fails the pipeline with SIGPIPE)
    targets="$(cmake --build "$dir" --target help 2>/dev/null)"
    if [[ "$targets" == *mpia_fft3d* ]]; then
      if ! cmake --build "$dir" -j "$MPIA_JOBS" --target mpia_fft3d >>"$blog" 2>&1; then
        tail -n 20 "$blog" >&2
        mpia_log "build of mpia_fft3d with $flavour failed (full log: $blog)"
        failures+=("$flavour: mpia_fft3d build failed")
      fi
    else
      mpia_log "mpia_fft3d is not configured for $flavour (FFTW missing?); skipping it"
    fi
  fi

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
    run_bench "$flavour" "$np" "alltoall_${flavour}_P${np}" \
      "${launcher[@]}" -n "$np" "$bench" "${SIZE_ARGS[@]}" "${args[@]}" "${EXTRA_ARGS[@]}" \
      --csv "results/alltoall_${flavour}_P${np}.csv"
  done

  # The all-to-all-v benchmark.
  case "$flavour" in
    openmpi) vnps="${MPIA_BENCH_V_NP_OPENMPI-2 16}" ;;
    mpich)   vnps="${MPIA_BENCH_V_NP_MPICH-2}" ;;
  esac
  for np in $vnps; do
    if [ "$np" -gt "$NCORES" ] && [ "$flavour" = mpich ]; then
      read -r -a args <<<"$V_OVERSUB_ARGS_MPICH"
    elif [ "$np" -gt "$NCORES" ]; then
      read -r -a args <<<"$V_OVERSUB_ARGS"
    else
      read -r -a args <<<"$V_DEDICATED_ARGS"
    fi
    run_bench "$flavour" "$np" "alltoallv_${flavour}_P${np}" \
      "${launcher[@]}" -n "$np" "$bench_v" "${V_SIZE_ARGS[@]}" "${args[@]}" "${V_EXTRA_ARGS[@]}" \
      --csv "results/alltoallv_${flavour}_P${np}.csv"
  done

  if [ "$flavour" = openmpi ]; then
    # Imbalance mode: seeded per-rank delays before each call, time from the last arrival.
    imb="${MPIA_BENCH_IMBALANCE:-200}"
    inp="${MPIA_BENCH_IMBALANCE_NP:-16}"
    if [ "$imb" != 0 ] && [ -n "$inp" ]; then
      read -r -a args <<<"${MPIA_BENCH_IMBALANCE_ARGS:---sizes 8,8192 --rounds 2 --iters 20 --warmup 2}"
      run_bench "$flavour" "$inp" "imbalance_${flavour}_P${inp}" \
        "${launcher[@]}" -n "$inp" "$bench_v" "${args[@]}" --imbalance "$imb" \
        --csv "results/imbalance_${flavour}_P${inp}.csv"
    fi
    # The 3-D FFT mini-app, when it was built.
    fft="$dir/benchmarks/fft3d/mpia_fft3d"
    if [ -x "$fft" ]; then
      read -r -a args <<<"${MPIA_BENCH_FFT_ARGS:---n 32 --iters 3 --backends system,pairwise,linear,multipair_waitany,multipair_testany,bruck,auto}"
      for np in ${MPIA_BENCH_FFT_NP-4}; do
        run_bench "$flavour" "$np" "fft3d_${flavour}_P${np}" \
          "${launcher[@]}" -n "$np" "$fft" "${args[@]}" --csv "results/fft3d_${flavour}_P${np}.csv"
      done
    fi
  fi

  # The neighbor all-to-all-v benchmark (stencil halos and sparse-matrix exchanges), when
  # benchmarks/neighbor.cmake defined its target. Nodes are emulated with MPIX_LOCALITY=ppn:K.
  case "$flavour" in
    openmpi) nnps="${MPIA_BENCH_NEIGHBOR_NP_OPENMPI-2 16}" ;;
    mpich)   nnps="${MPIA_BENCH_NEIGHBOR_NP_MPICH-2}" ;;
  esac
  if [ -n "$nnps" ]; then
    targets="$(cmake --build "$dir" --target help 2>/dev/null)"
    if [[ "$targets" == *mpia_bench_neighbor* ]]; then
      if ! cmake --build "$dir" -j "$MPIA_JOBS" --target mpia_bench_neighbor >>"$blog" 2>&1; then
        tail -n 20 "$blog" >&2
        mpia_log "build of mpia_bench_neighbor with $flavour failed (full log: $blog)"
        failures+=("$flavour: mpia_bench_neighbor build failed")
        nnps=""
      fi
    else
      mpia_log "mpia_bench_neighbor is not configured for $flavour; skipping it"
      nnps=""
    fi
  fi
  N_SIZE_ARGS=()
  [ -n "${MPIA_BENCH_NEIGHBOR_SIZES:-}" ] && N_SIZE_ARGS=(--sizes "$MPIA_BENCH_NEIGHBOR_SIZES")
  read -r -a N_EXTRA_ARGS <<<"${MPIA_BENCH_NEIGHBOR_ARGS:-}"
  for np in $nnps; do
    if [ "$np" -gt "$NCORES" ] && [ "$flavour" = mpich ]; then
      read -r -a args <<<"${MPIA_BENCH_NEIGHBOR_ARGS_OVERSUB_MPICH:---iters 5 --warmup 1}"
    elif [ "$np" -gt "$NCORES" ]; then
      read -r -a args <<<"${MPIA_BENCH_NEIGHBOR_ARGS_OVERSUB:---iters 40 --warmup 4}"
    else
      read -r -a args <<<"${MPIA_BENCH_NEIGHBOR_ARGS_DEDICATED:---iters 300 --warmup 20}"
    fi
    ppn="${MPIA_BENCH_NEIGHBOR_PPN:-4}"
    [ "$ppn" -gt $((np / 2)) ] && ppn=$((np / 2))
    [ "$ppn" -lt 1 ] && ppn=1
    run_bench "$flavour" "$np" "neighbor_${flavour}_P${np}" \
      env MPIX_LOCALITY="ppn:$ppn" "${launcher[@]}" -n "$np" "$dir/benchmarks/mpia_bench_neighbor" \
      "${N_SIZE_ARGS[@]}" "${args[@]}" "${N_EXTRA_ARGS[@]}" \
      --csv "results/neighbor_${flavour}_P${np}.csv"
  done

  # The overlap benchmark (progress thread or not), when benchmarks/overlap.cmake defined it.
  case "$flavour" in
    openmpi) onps="${MPIA_BENCH_OVERLAP_NP_OPENMPI-2}" ;;
    mpich)   onps="${MPIA_BENCH_OVERLAP_NP_MPICH-2}" ;;
  esac
  if [ -n "$onps" ]; then
    targets="$(cmake --build "$dir" --target help 2>/dev/null)"
    if [[ "$targets" != *mpia_bench_overlap* ]]; then
      mpia_log "mpia_bench_overlap is not configured for $flavour; skipping it"
      onps=""
    elif ! cmake --build "$dir" -j "$MPIA_JOBS" --target mpia_bench_overlap >>"$blog" 2>&1; then
      tail -n 20 "$blog" >&2
      mpia_log "build of mpia_bench_overlap with $flavour failed (full log: $blog)"
      failures+=("$flavour: mpia_bench_overlap build failed")
      onps=""
    fi
  fi
  read -r -a O_ARGS <<<"${MPIA_BENCH_OVERLAP_ARGS:-}"
  for np in $onps; do
    run_bench "$flavour" "$np" "overlap_${flavour}_P${np}" \
      "${launcher[@]}" -n "$np" "$dir/benchmarks/mpia_bench_overlap" "${O_ARGS[@]}" \
      --csv "results/overlap_${flavour}_P${np}.csv"
  done
done

# All summaries together (the logs of mpia_bench and mpia_bench_v end with a summary table;
# the FFT mini-app's is short enough to repeat whole).
for log in "${logs[@]}"; do
  echo
  echo "=== ${log%.log}"
  if grep -q '^# summary' "$log"; then
    sed -n '/^# summary/,$p' "$log"
  else
    cat "$log"
  fi
done

echo
echo "bench.sh: $ran benchmark run(s) completed in $((SECONDS - t_start)) s; results in results/"
if [ "${#failures[@]}" -gt 0 ]; then
  printf 'bench.sh: FAILED: %s\n' "${failures[@]}" >&2
  exit 1
fi
exit 0
