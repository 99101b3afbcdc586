#!/usr/bin/env bash
# Real-rank persistent overhead at P = 2: MPIX_Start + MPIX_Wait of mpi-advance's algorithms
# against the MPI library's own persistent all-to-all (Open MPI 4.1's MPIX_Alltoall_init from
# <mpi-ext.h>, MPICH's MPI_Alltoall_init), the blocking calls, plan set-up cost, and callgrind
# instruction counts of one call (the stable figure on a noisy machine).
#
#   bash scripts/perf_persistent.sh            both MPIs: timing, init, callgrind tables
#
# Environment:
#   MPIA_PERF_FLAVOURS  "openmpi mpich" (default) or one of them
#   MPIA_PERF_SIZES     block sizes in bytes (default 1,8)
#   MPIA_PERF_ROUNDS    timing rounds (default 200); every round runs every variant, rotating
#   MPIA_PERF_BATCH     back-to-back calls timed together per round and variant (default 200)
#   MPIA_PERF_ITERS     barrier-separated calls timed one by one per round and variant (default 20)
#   MPIA_PERF_INIT_ROUNDS  init/free rounds (default 100)
#   MPIA_PERF_REPS      calls per variant under callgrind (default 10)
#   MPIA_PERF_STAGES    any of "time init callgrind" (default all three)
#   MPIA_PERF_ANNOTATE  a variant and block (e.g. linear@8): print callgrind_annotate of its
#                       first measured call
#   MPIA_PERF_CG_TRIAL_TIMES  MPIX_TRIAL_TIMES of the callgrind stage (default "*=100,linear=10":
#                       auto's trials settle on linear, so that its rows count auto's own cost,
#                       not whichever entry won a trial timed on a rank slowed down by callgrind;
#                       set it empty to let the trials measure)
#
# Builds the library (RelWithDebInfo: -O2 -g, what a user's release build gets) into
# build/perf-<flavour> and the program scripts/perf/persistent_overhead.cpp next to it. Output
# (tables and callgrind files) goes to build/perf-<flavour>/perf-out/.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=scripts/common.sh
. scripts/common.sh
mpia_mpi_env

: "${MPIA_PERF_FLAVOURS:=openmpi mpich}"
: "${MPIA_PERF_SIZES:=1,8}"
: "${MPIA_PERF_ROUNDS:=200}"
: "${MPIA_PERF_BATCH:=200}"
: "${MPIA_PERF_ITERS:=20}"
: "${MPIA_PERF_INIT_ROUNDS:=100}"
: "${MPIA_PERF_REPS:=10}"
: "${MPIA_PERF_STAGES:=time init callgrind}"
: "${MPIA_PERF_ANNOTATE:=}"
: "${MPIA_PERF_CG_TRIAL_TIMES=*=100,linear=10}"

command -v valgrind >/dev/null || { mpia_log "valgrind is missing (apt-get install valgrind)"; exit 2; }

has_stage() { [[ " $MPIA_PERF_STAGES " == *" $1 "* ]]; }

build_one() { # build_one FLAVOUR -> prints the program path
  local f="$1" dir="build/perf-$f"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPIA_BUILD_TESTS=OFF \
    -DMPIA_BUILD_BENCHMARKS=OFF \
    -DMPI_C_COMPILER="$(command -v "$(mpia_mpicc "$f")")" \
    -DMPI_CXX_COMPILER="$(command -v "$(mpia_mpicxx "$f")")" \
    -DMPIEXEC_EXECUTABLE="$(command -v "$(mpia_mpiexec "$f")")" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log" >&2; return 1; }
  cmake --build "$dir" -j "$MPIA_JOBS" --target mpi_advance >"$dir.build.log" 2>&1 ||
    { tail -30 "$dir.build.log" >&2; return 1; }
  "$(mpia_mpicxx "$f")" -std=c++17 -O2 -g -I"$dir/include" \
    scripts/perf/persistent_overhead.cpp scripts/perf/system_alltoall.cpp \
    -L"$dir/src" -Wl,-rpath,"$PWD/$dir/src" -lmpi_advance -o "$dir/perf_persistent" ||
    return 1
  printf '%s\n' "$dir/perf_persistent"
}

# Instruction counts of one call from the callgrind dumps (one dump per call): per variant and
# block, the median over the calls of the total, of the part inside the MPI library's entry
# points (inclusive cost of the MPI_x / PMPI_x functions; the harness's own MPI_Barrier excluded)
# and of the rest (our layer; for the system's variants the harness's call of MPI).
callgrind_table() { # callgrind_table OUTDIR
  mpia_callgrind_counts "$1" '^MPI_Barrier$' | awk '
    function med(a, n,   i, j, t) {  # a[1..n] sorted copy
      for (i = 2; i <= n; ++i) for (j = i; j > 1 && a[j-1] > a[j]; --j) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    { k = $1; if (!(k in n)) order[++nk] = k; i = ++n[k]; T[k, i] = $2; M[k, i] = $3 }
    END {
      printf "%-22s %6s %12s %12s %12s %6s\n", "variant", "block", "instr/call", "in_MPI", "outside_MPI", "calls"
      for (q = 1; q <= nk; ++q) {
        k = order[q]; split("", a); split("", b); split("", c)
        for (i = 1; i <= n[k]; ++i) { a[i] = T[k, i]; b[i] = M[k, i]; c[i] = T[k, i] - M[k, i] }
        v = k; sub(/@.*/, "", v); blk = k; sub(/.*@/, "", blk)
        printf "%-22s %6s %12.0f %12.0f %12.0f %6d\n", v, blk, med(a, n[k]), med(b, n[k]), med(c, n[k]), n[k]
      } }'
}

for f in $MPIA_PERF_FLAVOURS; do
  mpia_check_flavour "$f" || exit 2
  mpia_have_flavour "$f" || { mpia_log "$f is not installed"; continue; }
  mpia_log "build $f into build/perf-$f"
  prog="$(build_one "$f")" || { mpia_log "build of $f failed"; exit 1; }
  out="build/perf-$f/perf-out"
  rm -rf "$out" && mkdir -p "$out"
  run=("$(mpia_mpiexec "$f")")
  printf '\n==== %s: %s\n' "$f" "$("$(mpia_mpicc "$f")" --version 2>/dev/null | head -1)"
  if has_stage time; then
    printf '\n-- Start+Wait and blocking calls, P=2: median over %s rounds (batch of %s calls) and over\n' \
      "$MPIA_PERF_ROUNDS" "$MPIA_PERF_BATCH"
    printf '   %s x %s barrier-separated calls (iter); ratios to the system persistent alltoall\n' \
      "$MPIA_PERF_ROUNDS" "$MPIA_PERF_ITERS"
    printf '   command: %s -n 2 %s time %s %s %s %s\n' "${run[0]}" "$prog" "$MPIA_PERF_SIZES" \
      "$MPIA_PERF_ROUNDS" "$MPIA_PERF_BATCH" "$MPIA_PERF_ITERS"
    "${run[@]}" -n 2 "$prog" time "$MPIA_PERF_SIZES" "$MPIA_PERF_ROUNDS" "$MPIA_PERF_BATCH" \
      "$MPIA_PERF_ITERS" | tee "$out/time.txt" || exit 1
  fi
  if has_stage init; then
    printf '\n-- Plan set-up, P=2: median over %s rounds of init, the first Start+Wait, free;\n' \
      "$MPIA_PERF_INIT_ROUNDS"
    printf '   MPIX_Alltoall(miss): a blocking call whose plan cache misses (buffers alternate)\n'
    "${run[@]}" -n 2 "$prog" init "$MPIA_PERF_SIZES" "$MPIA_PERF_INIT_ROUNDS" |
      tee "$out/init.txt" || exit 1
  fi
  if has_stage callgrind; then
    printf '\n-- callgrind, rank 0 (rank 1 native, its message already in): instructions of one call,\n'
    printf '   median over %s calls; in_MPI: inside MPI_* entry points; outside_MPI: the rest\n' "$MPIA_PERF_REPS"
    printf '   MPIX_TRIAL_TIMES=%s (auto: what its trials settle on)\n' "$MPIA_PERF_CG_TRIAL_TIMES"
    printf '   command: %s -n 1 valgrind --tool=callgrind --collect-atstart=no %s callgrind %s %s : -n 1 %s callgrind ...\n' \
      "${run[0]}" "$prog" "$MPIA_PERF_SIZES" "$MPIA_PERF_REPS" "$prog"
    MPIX_TRIAL_TIMES="$MPIA_PERF_CG_TRIAL_TIMES" "${run[@]}" -n 1 valgrind --tool=callgrind --collect-atstart=no \
      --callgrind-out-file="$out/cg.out" "$prog" callgrind "$MPIA_PERF_SIZES" "$MPIA_PERF_REPS" \
      : -n 1 "$prog" callgrind "$MPIA_PERF_SIZES" "$MPIA_PERF_REPS" >"$out/callgrind.log" 2>&1 ||
      { tail -20 "$out/callgrind.log"; exit 1; }
    callgrind_table "$out" | tee "$out/callgrind.txt"
    if [ -n "$MPIA_PERF_ANNOTATE" ]; then
      for file in "$out"/cg.out.*; do
        grep -q "Client Request: $MPIA_PERF_ANNOTATE#0\$" "$file" || continue
        printf '\n-- callgrind_annotate %s (one call; self cost)\n' "$file"
        callgrind_annotate --threshold=99 "$file" | sed -n '/file:function/,$p' | head -70
      done
    fi
  fi
done
