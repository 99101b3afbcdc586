#!/usr/bin/env bash
# scripts/bench.sh -- install the prerequisites, build mpi-advance (Release) against each MPI
# flavour and run the benchmark driver mpia_bench over its three collectives at a few process
# counts: all-to-all (--collective alltoall), all-to-all-v (--collective alltoallv: count
# patterns, windows, radices) and its imbalance mode (Open MPI), neighbor all-to-all-v
# (--collective neighbor: stencils and sparse matrices, nodes emulated with MPIX_LOCALITY), then
# the overlap driver mpia_bench_overlap (Start / compute / Wait with and without the progress
# thread) and, when it was built (FFTW found), the 3-D FFT mini-app (mpia_fft3d, Open MPI).
#
#   bash scripts/bench.sh
#
# Writes results/alltoall_<flavour>_P<P>.csv, results/alltoallv_<flavour>_P<P>.csv,
# results/imbalance_openmpi_P<P>.csv, results/neighbor_<flavour>_P<P>.csv,
# results/overlap_<flavour>_P<P>.csv, results/fft3d_openmpi_P<P>.csv, each with a .log that
# holds the full tables (an mpia_bench log ends with a summary table; every mpia_bench CSV has
# the same columns) and, when matplotlib is installed, a plot per CSV of mpia_bench
# (results/<name>.png: auto, the MPI library's call and the best of our fixed algorithms per
# size, and their ratios; benchmarks/plot_bench.py). Prints a line per run, the overlap and FFT
# tables, and ends with the verdict (benchmarks/verdict.py, from the CSVs): per collective, MPI
# and P, auto's time over the MPI library's call's (the range over the sizes) and what auto
# chose at each size. Five to fifteen minutes on a 2-core machine (depending on its load) once
# scripts/setup.sh has installed the packages.
#
# The runs keep mpia_bench's timing short, not its OSU-like defaults (docs/benchmarks.md):
# fixed sizes, fewer iterations at 16 ranks, a warm-up of 1-20 starts; a persistent auto
# request still warms up until its measured trial has settled (mpia_bench --trial-warmup), so
# that auto's rows time its settled plan.
#
# Environment (all optional):
#   MPIA_BENCH_FLAVOURS   MPI flavours, space or comma separated (default "openmpi mpich")
#   MPIA_BENCH_NP_OPENMPI process counts for Open MPI (default "2 16"; more ranks than cores
#                         run oversubscribed, with yield-when-idle)
#   MPIA_BENCH_NP_MPICH   process counts for MPICH (default "2"; MPICH busy-polls when
#                         oversubscribed, 8-32 ms per collective: "2 4" at most, and read the
#                         oversubscribed numbers as scheduling noise)
#   MPIA_BENCH_SIZES      block sizes in bytes, comma separated (default 1,8,64,512,4096,32768)
#   MPIA_BENCH_ARGS_DEDICATED  mpia_bench options when P <= cores
#                         (default "--rounds 10 --iters 2000 --warmup 10")
#   MPIA_BENCH_ARGS_OVERSUB    mpia_bench options when P > cores, oversubscribed, Open MPI
#                         (default "--rounds 5 --iters 200 --warmup 3")
#   MPIA_BENCH_ARGS_OVERSUB_MPICH  the same for MPICH (default "--rounds 2 --iters 10 --warmup 1")
#   MPIA_BENCH_ARGS       extra mpia_bench options for every run (e.g. "--variants tra:*")
#   MPIA_BENCH_V_NP_OPENMPI / MPIA_BENCH_V_NP_MPICH  process counts of the alltoallv runs
#                         (default "2 16" / "2"; "" skips)
#   MPIA_BENCH_V_SIZES    their average block sizes (default 8,512,8192)
#   MPIA_BENCH_V_ARGS_DEDICATED  their mpia_bench options when P <= cores
#                         (default "--rounds 5 --iters 1000 --warmup 10")
#   MPIA_BENCH_V_ARGS_OVERSUB    the same when P > cores, Open MPI
#                         (default "--rounds 2 --iters 20 --warmup 2")
#   MPIA_BENCH_V_ARGS_OVERSUB_MPICH  the same for MPICH (default "--rounds 1 --iters 5 --warmup 1")
#   MPIA_BENCH_V_ARGS     extra options for every alltoallv run (e.g. "--patterns sparse")
#   MPIA_BENCH_IMBALANCE  maximal per-rank delay in us of the imbalance run (default 200; 0 skips)
#   MPIA_BENCH_IMBALANCE_NP     its process count, Open MPI (default 16)
#   MPIA_BENCH_IMBALANCE_ARGS   its options (default "--sizes 8,8192 --rounds 2 --iters 20
#                         --warmup 2")
#   MPIA_BENCH_FFT_NP     process counts of the FFT mini-app, Open MPI (default "4"; "" skips)
#   MPIA_BENCH_FFT_ARGS   its options (default "--n 32 --iters 3 --backends system,pairwise,
#                         linear,multipair_waitany,multipair_testany,bruck,auto")
#   MPIA_BENCH_NEIGHBOR_NP_OPENMPI / MPIA_BENCH_NEIGHBOR_NP_MPICH  process counts of the
#                         neighbor runs (default "2 16" / "2"; "" skips)
#   MPIA_BENCH_NEIGHBOR_PPN    ranks per emulated node (MPIX_LOCALITY=ppn:K) of its runs, at
#                         most P/2 so that there are at least two nodes (default 4)
#   MPIA_BENCH_NEIGHBOR_SIZES  its sizes n, comma separated (default 8,32,128)
#   MPIA_BENCH_NEIGHBOR_ARGS_DEDICATED  its options when P <= cores
#                         (default "--iters 300 --warmup 20")
#   MPIA_BENCH_NEIGHBOR_ARGS_OVERSUB    the same when P > cores, Open MPI
#                         (default "--iters 40 --warmup 4")
#   MPIA_BENCH_NEIGHBOR_ARGS_OVERSUB_MPICH  the same for MPICH (default "--iters 5 --warmup 1")
#   MPIA_BENCH_NEIGHBOR_ARGS   extra options for every run (e.g. "--patterns stencil3d")
#   MPIA_BENCH_OVERLAP_NP_OPENMPI / MPIA_BENCH_OVERLAP_NP_MPICH  process counts of
#                         mpia_bench_overlap (default "2" each, a few seconds; "" skips)
#   MPIA_BENCH_OVERLAP_ARGS    its options (default: its own, bruck,tra at 4k,64k,512k)
#   MPIA_BENCH_TIMEOUT    seconds one mpirun may take before it is killed (default 600)
#   MPIA_BENCH_TIME_LIMIT seconds every mpia_bench run aims to end within (mpia_bench
#                         --time-limit: fewer iterations where the rest would not fit, noted in
#                         its log; default 80 % of MPIA_BENCH_TIMEOUT less 15 s for start-up;
#                         0: none)
#   MPIA_BENCH_PLOTS=0    no plots; MPIA_BENCH_PLOTS=all: also results/<name>_all.png, every
#                         variant's line
#   MPIA_BENCH_VERBOSE=1  print every run's tables as it runs (they are in its .log anyway)
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
# A budget mpia_bench keeps (a loaded machine's 16-rank runs would otherwise hit the timeout and
# lose their rows), with room for MPI's start-up and the last case's tables.
TIME_LIMIT="${MPIA_BENCH_TIME_LIMIT:-}"
if [ -z "$TIME_LIMIT" ]; then
  TIME_LIMIT=$((TIMEOUT * 4 / 5 - 15))
  [ "$TIME_LIMIT" -ge 1 ] || TIME_LIMIT=1
fi

mkdir -p results
failures=()
logs=()
ran=0
t_start=$SECONDS

# run_bench FLAVOUR NP NAME COMMAND...: run one benchmark under the timeout, its output in
# results/NAME.log (also on the terminal with MPIA_BENCH_VERBOSE=1), record a failure or the log.
run_bench() {
  local flavour="$1" np="$2" name="$3" rc t0
  shift 3
  local log="results/$name.log"
  echo
  echo "=== $name: $flavour, P=$np$([ "$np" -gt "$NCORES" ] && echo " (oversubscribed on $NCORES cores)")"
  echo "=== $*"
  t0=$SECONDS
  if [ "${MPIA_BENCH_VERBOSE:-0}" = 1 ]; then
    timeout --signal=TERM --kill-after=10 "$TIMEOUT" "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
  else
    timeout --signal=TERM --kill-after=10 "$TIMEOUT" "$@" >"$log" 2>&1
    rc=$?
  fi
  echo "=== $name: exit $rc after $((SECONDS - t0)) s; tables in $log"
  if [ "$rc" -ne 0 ]; then
    [ "${MPIA_BENCH_VERBOSE:-0}" = 1 ] || tail -n 20 "$log" >&2
    [ "$rc" -eq 124 ] && echo "=== TIMED OUT after $TIMEOUT s" >&2
    failures+=("$name: exit $rc (see $log)")
  else
    ran=$((ran + 1))
    logs+=("$log")
  fi
}

# run_coll FLAVOUR NAME NPS SIZES DEDICATED OVERSUB OVERSUB_MPICH EXTRA [PPN]: mpia_bench
# --collective NAME at each process count of NPS, with the options for a dedicated or an
# oversubscribed run, results/NAME_FLAVOUR_P<P>.csv; PPN: ranks per emulated node
# (MPIX_LOCALITY=ppn:K, at most P/2 so that there are at least two nodes).
run_coll() {
  local flavour="$1" coll="$2" nps="$3" sizes="$4" ded="$5" over="$6" over_mpich="$7" extra="$8"
  local ppn_max="${9:-}" np args sargs xargs envs ppn
  read -r -a xargs <<<"$extra"
  sargs=(--time-limit "$TIME_LIMIT")
  [ -n "$sizes" ] && sargs+=(--sizes "$sizes")
  for np in $nps; do
    if [ "$np" -gt "$NCORES" ] && [ "$flavour" = mpich ]; then
      read -r -a args <<<"$over_mpich"
    elif [ "$np" -gt "$NCORES" ]; then
      read -r -a args <<<"$over"
    else
      read -r -a args <<<"$ded"
    fi
    envs=()
    if [ -n "$ppn_max" ]; then
      ppn="$ppn_max"
      [ "$ppn" -gt $((np / 2)) ] && ppn=$((np / 2))
      [ "$ppn" -lt 1 ] && ppn=1
      envs=(MPIX_LOCALITY="ppn:$ppn")
    fi
    run_bench "$flavour" "$np" "${coll}_${flavour}_P${np}" \
      env "${envs[@]}" "${launcher[@]}" -n "$np" "$bench" --collective "$coll" "${sargs[@]}" \
      "${args[@]}" "${xargs[@]}" --csv "results/${coll}_${flavour}_P${np}.csv"
  done
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

  # A Release build of the library and the benchmarks only, in its own directory
  # (build/<flavour>-release) so that the test builds in build/<flavour> keep their settings.
  dir="$(mpia_build_dir "$flavour" release)"
  blog="results/build_$flavour.log"
  mpia_log "configure + build $flavour (Release) in ${dir#"$ROOT"/} (log: $blog)"
  if ! cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
        -DMPI_C_COMPILER="$(command -v "$(mpia_mpicc "$flavour")")" \
        -DMPI_CXX_COMPILER="$(command -v "$(mpia_mpicxx "$flavour")")" \
        -DMPIEXEC_EXECUTABLE="$(command -v "$(mpia_mpiexec "$flavour")")" \
        -DMPIA_BUILD_TESTS=OFF -DMPIA_BUILD_BENCHMARKS=ON >"$blog" 2>&1 ||
     ! cmake --build "$dir" -j "$MPIA_JOBS" --target mpia_bench mpia_bench_overlap >>"$blog" 2>&1; then
    tail -n 40 "$blog" >&2
    mpia_log "build with $flavour failed (full log: $blog)"
    failures+=("$flavour: build failed")
    continue
  fi
  bench="$dir/benchmarks/mpia_bench"
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
    openmpi)
      launcher=("$(mpia_mpiexec openmpi)" --oversubscribe)
      nps="${MPIA_BENCH_NP_OPENMPI:-2 16}"
      vnps="${MPIA_BENCH_V_NP_OPENMPI-2 16}"
      nnps="${MPIA_BENCH_NEIGHBOR_NP_OPENMPI-2 16}"
      onps="${MPIA_BENCH_OVERLAP_NP_OPENMPI-2}" ;;
    mpich)
      launcher=("$(mpia_mpiexec mpich)")
      nps="${MPIA_BENCH_NP_MPICH:-2}"
      vnps="${MPIA_BENCH_V_NP_MPICH-2}"
      nnps="${MPIA_BENCH_NEIGHBOR_NP_MPICH-2}"
      onps="${MPIA_BENCH_OVERLAP_NP_MPICH-2}" ;;
  esac

  run_coll "$flavour" alltoall "$nps" "${MPIA_BENCH_SIZES:-1,8,64,512,4096,32768}" \
    "${MPIA_BENCH_ARGS_DEDICATED:---rounds 10 --iters 2000 --warmup 10}" \
    "${MPIA_BENCH_ARGS_OVERSUB:---rounds 5 --iters 200 --warmup 3}" \
    "${MPIA_BENCH_ARGS_OVERSUB_MPICH:---rounds 2 --iters 10 --warmup 1}" "${MPIA_BENCH_ARGS:-}"
  run_coll "$flavour" alltoallv "$vnps" "${MPIA_BENCH_V_SIZES:-8,512,8192}" \
    "${MPIA_BENCH_V_ARGS_DEDICATED:---rounds 5 --iters 1000 --warmup 10}" \
    "${MPIA_BENCH_V_ARGS_OVERSUB:---rounds 2 --iters 20 --warmup 2}" \
    "${MPIA_BENCH_V_ARGS_OVERSUB_MPICH:---rounds 1 --iters 5 --warmup 1}" "${MPIA_BENCH_V_ARGS:-}"

  if [ "$flavour" = openmpi ]; then
    # Imbalance mode: seeded per-rank delays before each call, time from the last arrival.
    imb="${MPIA_BENCH_IMBALANCE:-200}"
    inp="${MPIA_BENCH_IMBALANCE_NP:-16}"
    if [ "$imb" != 0 ] && [ -n "$inp" ]; then
      read -r -a args <<<"${MPIA_BENCH_IMBALANCE_ARGS:---sizes 8,8192 --rounds 2 --iters 20 --warmup 2}"
      run_bench "$flavour" "$inp" "imbalance_${flavour}_P${inp}" \
        "${launcher[@]}" -n "$inp" "$bench" --collective alltoallv --time-limit "$TIME_LIMIT" \
        "${args[@]}" --imbalance "$imb" \
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

  # Neighbor all-to-all-v (stencil halos and sparse-matrix exchanges), nodes emulated with
  # MPIX_LOCALITY=ppn:K.
  run_coll "$flavour" neighbor "$nnps" "${MPIA_BENCH_NEIGHBOR_SIZES:-8,32,128}" \
    "${MPIA_BENCH_NEIGHBOR_ARGS_DEDICATED:---iters 300 --warmup 20}" \
    "${MPIA_BENCH_NEIGHBOR_ARGS_OVERSUB:---iters 40 --warmup 4}" \
    "${MPIA_BENCH_NEIGHBOR_ARGS_OVERSUB_MPICH:---iters 5 --warmup 1}" \
    "${MPIA_BENCH_NEIGHBOR_ARGS:-}" "${MPIA_BENCH_NEIGHBOR_PPN:-4}"

  # The overlap driver (progress thread or not).
  read -r -a O_ARGS <<<"${MPIA_BENCH_OVERLAP_ARGS:-}"
  for np in $onps; do
    run_bench "$flavour" "$np" "overlap_${flavour}_P${np}" \
      "${launcher[@]}" -n "$np" "$dir/benchmarks/mpia_bench_overlap" "${O_ARGS[@]}" \
      --csv "results/overlap_${flavour}_P${np}.csv"
  done
done

# The CSVs of mpia_bench's main runs (the verdict's and the plots'; the imbalance run is plotted
# but has no verdict).
csvs=()
vcsvs=()
for log in "${logs[@]}"; do
  case "$log" in results/overlap_*|results/fft3d_*) continue ;; esac
  [ -s "${log%.log}.csv" ] || continue
  csvs+=("${log%.log}.csv")
  case "$log" in results/imbalance_*) ;; *) vcsvs+=("${log%.log}.csv") ;; esac
done

# Plots: auto, the MPI library's call and the best of ours per size (and every variant with
# MPIA_BENCH_PLOTS=all), when matplotlib is there.
plots="${MPIA_BENCH_PLOTS:-1}"
if [ "$plots" != 0 ] && [ "${#csvs[@]}" -gt 0 ]; then
  if py="$(mpia_python matplotlib)"; then
    all=()
    [ "$plots" = all ] && all=(--all)
    echo
    "$py" "$ROOT/benchmarks/plot_bench.py" "${all[@]}" "${csvs[@]}" ||
      mpia_log "plot_bench.py failed (the CSVs are fine)"
  else
    mpia_log "no plots"
  fi
fi

# The overlap driver's and the FFT mini-app's tables (short; the verdict does not cover them).
for log in "${logs[@]}"; do
  case "$log" in results/overlap_*|results/fft3d_*) ;; *) continue ;; esac
  echo
  echo "=== ${log%.log}"
  cat "$log"
done

echo
echo "bench.sh: $ran benchmark run(s) completed in $((SECONDS - t_start)) s. Full tables: results/<name>.log"
echo "  (an mpia_bench log ends with a summary table); every row: results/<name>.csv; plots:"
echo "  results/<name>.png; the options: docs/benchmarks.md"
status=0
if [ "${#failures[@]}" -gt 0 ]; then
  printf 'bench.sh: FAILED: %s\n' "${failures[@]}" >&2
  status=1
fi

# Last: the verdict, from the CSVs (Python's standard library only).
if [ "${#vcsvs[@]}" -gt 0 ]; then
  echo
  if vpy="$(command -v python3 || command -v /usr/bin/python3)"; then
    "$vpy" "$ROOT/benchmarks/verdict.py" --cores "$NCORES" "${vcsvs[@]}" || status=1
  else
    mpia_log "no python3: no verdict (the CSVs are in results/)"
  fi
fi
exit "$status"
