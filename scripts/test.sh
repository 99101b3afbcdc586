#!/usr/bin/env bash
# The test suite of mpi-advance, end to end, on a fresh Debian machine:
#   1. scripts/setup.sh (installs missing packages; fast when none are missing)
#      then scripts/check_format.sh: every C, C++ and header file follows .clang-format
#   2. for each MPI (Open MPI, MPICH): configure + build into build/<flavour>, then ctest
#      (MPICH at fewer rank counts: oversubscribed, it busy-polls), without the >2 GiB tests
#   3. the >2 GiB tests (ctest label "large") once, with Open MPI at 1 and 2 ranks, for a sample of
#      the algorithms (every byte path: pairwise, bruck, tra, the windowed alltoallv, system; the
#      neighbor calls: direct, locality), the large-count _c forms included
#   4. an ASan+UBSan build (-DMPIA_SANITIZE=ON) with Open MPI into build/openmpi-asan, ctest
#      with leak checking (MPI's own leaks suppressed by test/lsan.supp): the unit tests, and
#      the MPI tests at one rank count
#   5. the installed-package test for each MPI (test/install/run_consumer_test.sh)
#   6. a small simulated run with SimGrid's SMPI (scripts/smpi/ci.sh: build/smpi, P = 32 on two
#      simulated nodes, results checked byte by byte; ~1.5 minutes, most of it the build)
#   7. the newer MPIs where scripts/newer_mpis.sh built them (Open MPI 5.0.x, MPICH 4.3.x): the
#      stages of 2 and 5 for each (docs/mpis.md)
# Ends with one line "N passed, N failed" (N counts stages) and exits non-zero on a failure.
#
# Environment:
#   MPIA_TEST_FLAVOURS  MPIs to test, e.g. "openmpi" (default "openmpi mpich")
#   MPIA_JOBS           parallel build jobs (default 2)
#   MPIA_CTEST_JOBS     parallel ctest jobs (default MPIA_JOBS; MPI tests reserve PROCESSORS=N)
#   MPIA_SKIP_ASAN=1    skip the sanitizer stages
#   MPIA_MPICH_TEST_NPROCS rank counts of the MPI tests with MPICH (default "1;2;3": one, even,
#                       odd and not a power of two; tests of locality, tra2 and the neighbor
#                       calls also run at 4, 5 or 7). Oversubscribed, MPICH busy-polls: 4 and 5
#                       took 4.5 and 5 min of the CI, so they are left to Open MPI, which runs
#                       every count of MPIA_TEST_NPROCS, 16 included)
#   MPIA_ASAN_TEST_NPROCS  rank counts of the MPI tests in the sanitizer build (default "3")
#   MPIA_LARGE_ALGORITHMS  algorithms of the >2 GiB stage (default below; "" for all of them)
#   MPIA_SKIP_LARGE=1   skip the >2 GiB stage
#   MPIA_SKIP_SMPI=1    skip the simulated (SimGrid SMPI) stage
#   MPIA_NEWER_MPIS     newer MPIs to test where scripts/newer_mpis.sh has built them (default
#                       "openmpi5 mpich4"; "" for none): stages build-, ctest-, install-<flavour>,
#                       after all the others
#   MPIA_NEWER_MPIS_DEADLINE  seconds after which a newer MPI's stages are skipped, saying so
#                       (default 3600)
#   MPIA_CMAKE_ARGS     extra cmake arguments for every configure (space separated)
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=scripts/common.sh
. scripts/common.sh

: "${MPIA_CTEST_JOBS:=$MPIA_JOBS}"
: "${MPIA_ASAN_TEST_NPROCS:=3}"
: "${MPIA_MPICH_TEST_NPROCS:=1;2;3}"
: "${MPIA_LARGE_ALGORITHMS=pairwise,bruck,tra,multipair_waitany,system,direct,locality}"
read -r -a cmake_args <<<"${MPIA_CMAKE_ARGS:-}"
logdir="$MPIA_ROOT/build/test-logs"
mkdir -p "$logdir"

names=()
results=()
durations=()
t_start=$SECONDS

# stage <name> <command...>: run, record PASS/FAIL; output goes to the terminal and a log.
stage() {
  local name="$1" t0=$SECONDS rc=0
  shift
  printf '\n######## %s\n' "$name"
  ( "$@" ) 2>&1 | tee "$logdir/${name//[^A-Za-z0-9_.-]/_}.log" || rc=$?
  names+=("$name")
  durations+=($((SECONDS - t0)))
  if [ "$rc" -eq 0 ]; then results+=(PASS); else results+=(FAIL); fi
  printf '######## %s: %s (%ds)\n' "$name" "${results[-1]}" "${durations[-1]}"
  return "$rc"
}
# A stage that cannot run because the one it needs failed: counted as failed.
blocked() {
  names+=("$1"); results+=("FAIL"); durations+=(0)
  printf '\n######## %s: FAIL (not run: %s)\n' "$1" "$2"
}

run_ctest() { # run_ctest <build-dir> <labels left out> [ctest args...]
  local dir="$1" out="$2"; shift 2
  ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$MPIA_CTEST_JOBS" \
    -LE "$out" "$@"
}

# The >2 GiB tests: each rank holds several GiB, so one at a time (1 and 2 ranks).
run_large_ctest() { # run_large_ctest <build-dir>
  echo "MPIA_LARGE_ALGORITHMS=$MPIA_LARGE_ALGORITHMS"
  MPIA_LARGE_ALGORITHMS="$MPIA_LARGE_ALGORITHMS" \
    ctest --test-dir "$1" --output-on-failure --no-tests=error -L large
}

# Sanitized tests: in-process (label unit) with ASan's default fast unwinding; MPI programs
# with full allocation stacks, so that MPI's own leaks are attributed to libmpi and suppressed
# (see mpia_sanitizer_env in common.sh and test/lsan.supp).
run_asan_ctest() { # run_asan_ctest <build-dir>
  local dir="$1" rc=0
  mpia_sanitizer_env
  echo "ASAN_OPTIONS=$ASAN_OPTIONS (+ $MPIA_ASAN_MPI_OPTIONS for MPI programs)"
  echo "UBSAN_OPTIONS=$UBSAN_OPTIONS"
  echo "LSAN_OPTIONS=$LSAN_OPTIONS"
  ctest --test-dir "$dir" --output-on-failure --no-tests=ignore -j "$MPIA_CTEST_JOBS" -L unit || rc=1
  local log mrc
  log="$(mktemp)"
  ASAN_OPTIONS="$ASAN_OPTIONS:$MPIA_ASAN_MPI_OPTIONS" \
    ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$MPIA_CTEST_JOBS" -LE 'unit|install' 2>&1 |
    tee "$log"
  mrc=${PIPESTATUS[0]}
  if [ "$mrc" -ne 0 ] && lsan_tracer_only "$log"; then
    echo "test.sh: every failure above is LeakSanitizer's own tracer crashing at exit after the test" \
         "passed (\"Tracer caught signal 11\", intermittent: google/sanitizers#1353): running those once more"
    ASAN_OPTIONS="$ASAN_OPTIONS:$MPIA_ASAN_MPI_OPTIONS" \
      ctest --test-dir "$dir" --output-on-failure --rerun-failed || rc=1
  elif [ "$mrc" -ne 0 ]; then
    rc=1
  fi
  rm -f "$log"
  return "$rc"
}

# lsan_tracer_only <ctest log>: whether ctest failed tests, and each one's output shows
# LeakSanitizer's tracer crashing ("LeakSanitizer has encountered a fatal error") and no sign of
# a real failure: a sanitizer's report, a failed check, a timeout.
lsan_tracer_only() {
  awk '
    function close_section() {
      if (name != "") { n++; if (!tracer || real) bad++ }
      name = ""
    }
    /Test +#[0-9]+: / || /^ *Start +[0-9]+: / || /tests passed, / {
      close_section()
      if ($0 ~ /Test +#[0-9]+: .*\*\*\*/) {
        name = $0; tracer = 0; real = ($0 ~ /Timeout/)
      }
      next
    }
    name != "" && /LeakSanitizer has encountered a fatal error/ { tracer = 1 }
    name != "" && /ERROR: (AddressSanitizer|LeakSanitizer: detected)|runtime error:|\[  FAILED  \]|WRONG RESULT|FATAL/ { real = 1 }
    END { close_section(); exit !(n > 0 && bad == 0) }
  ' "$1"
}

if ! mpia_flavours >/dev/null || [ -z "$(mpia_flavours)" ]; then
  echo "test.sh: bad MPIA_TEST_FLAVOURS='${MPIA_TEST_FLAVOURS:-}' (use openmpi and/or mpich)" >&2
  echo "0 passed, 1 failed"
  exit 2
fi
mapfile -t flavours < <(mpia_flavours)
echo "flavours: ${flavours[*]}  build jobs: $MPIA_JOBS  ctest jobs: $MPIA_CTEST_JOBS"

stage setup bash scripts/setup.sh
stage format bash scripts/check_format.sh
mpia_mpi_env

declare -A built=()
for f in "${flavours[@]}"; do
  nprocs=()
  [ "$f" = mpich ] && nprocs=(-DMPIA_TEST_NPROCS="$MPIA_MPICH_TEST_NPROCS")
  # The in-process unit tests (label unit) make no MPI call: they are built and run with Open
  # MPI (and sanitized), not again with MPICH.
  out='install|large'
  unit=ON
  if [ "$f" = mpich ] && [ "${#flavours[@]}" -gt 1 ]; then
    out='install|large|unit'
    unit=OFF
  fi
  if stage "build-$f" mpia_build "$f" "" "${nprocs[@]}" -DMPIA_BUILD_UNIT_TESTS=$unit \
       "${cmake_args[@]}"; then
    built[$f]=1
    stage "ctest-$f" run_ctest "$(mpia_build_dir "$f")" "$out"
  else
    blocked "ctest-$f" "build-$f failed"
  fi
done

if [ "${MPIA_SKIP_LARGE:-0}" != 1 ]; then
  large_flavour="${flavours[0]}"
  for f in "${flavours[@]}"; do [ "$f" = openmpi ] && large_flavour=openmpi; done
  if [ -n "${built[$large_flavour]:-}" ]; then
    stage "large-$large_flavour" run_large_ctest "$(mpia_build_dir "$large_flavour")"
  else
    blocked "large-$large_flavour" "build-$large_flavour failed"
  fi
fi

if [ "${MPIA_SKIP_ASAN:-0}" != 1 ]; then
  asan_flavour="${flavours[0]}"
  for f in "${flavours[@]}"; do [ "$f" = openmpi ] && asan_flavour=openmpi; done
  if stage "build-$asan_flavour-asan" mpia_build "$asan_flavour" asan \
       -DMPIA_TEST_NPROCS="$MPIA_ASAN_TEST_NPROCS" "${cmake_args[@]}"; then
    stage "ctest-$asan_flavour-asan" run_asan_ctest "$(mpia_build_dir "$asan_flavour" asan)"
  else
    blocked "ctest-$asan_flavour-asan" "build-$asan_flavour-asan failed"
  fi
fi

for f in "${flavours[@]}"; do
  if [ -n "${built[$f]:-}" ]; then
    stage "install-$f" bash test/install/run_consumer_test.sh "$(mpia_build_dir "$f")" "$f"
  else
    blocked "install-$f" "build-$f failed"
  fi
done

# A small simulated run (SimGrid SMPI; scripts/smpi/ci.sh): P = 32 on 2 simulated nodes, every
# result checked byte by byte, and the library's persistent messages charged like MPI_Isend.
if [ "${MPIA_SKIP_SMPI:-0}" != 1 ]; then
  stage smpi bash scripts/smpi/ci.sh
fi

# The newer MPIs (Open MPI 5.0.x: openmpi5, MPICH 4.2+: mpich4), built once per machine by
# scripts/newer_mpis.sh into its cache (outside the checkout). Where the cache has them they get
# the Debian MPIs' stages: build, the full ctest (the unit tests, which make no MPI call, ran
# already and are not built again), the installed-package test. Where it has not (a fresh CI
# machine: building both takes about 30 minutes here), the summary says they were skipped and
# why. They run last, and each starts only before MPIA_NEWER_MPIS_DEADLINE seconds of this
# script have passed (default 3600: openmpi5 takes 5 minutes here, mpich4 12-15), so that a slow machine
# skips them, saying so, rather than run the CI past its 90 minutes.
newer_skipped=()
newer="${MPIA_NEWER_MPIS-openmpi5 mpich4}"
deadline="${MPIA_NEWER_MPIS_DEADLINE:-3600}"
for f in $newer; do
  mpia_check_flavour "$f" || continue
  if ! prefix="$(mpia_newer_prefix "$f")"; then
    newer_skipped+=("$f: not built on this machine (bash scripts/newer_mpis.sh, docs/mpis.md)")
    continue
  fi
  if [ $((SECONDS - t_start)) -ge "$deadline" ]; then
    newer_skipped+=("$f: built here, but $((SECONDS - t_start)) s had passed, past MPIA_NEWER_MPIS_DEADLINE=$deadline")
    continue
  fi
  echo "$f: $prefix"
  nprocs=()
  [ "$(mpia_family "$f")" = mpich ] && nprocs=(-DMPIA_TEST_NPROCS="$MPIA_MPICH_TEST_NPROCS")
  if stage "build-$f" mpia_build "$f" "" "${nprocs[@]}" -DMPIA_BUILD_UNIT_TESTS=OFF \
       "${cmake_args[@]}"; then
    stage "ctest-$f" run_ctest "$(mpia_build_dir "$f")" 'install|large|unit'
    stage "install-$f" bash test/install/run_consumer_test.sh "$(mpia_build_dir "$f")" "$f"
  else
    blocked "ctest-$f" "build-$f failed"
    blocked "install-$f" "build-$f failed"
  fi
done

passed=0
failed=0
printf '\n######## summary (%ds, logs in %s)\n' $((SECONDS - t_start)) "${logdir#"$MPIA_ROOT"/}"
for i in "${!names[@]}"; do
  printf '  %-4s %-24s %5ds\n' "${results[$i]}" "${names[$i]}" "${durations[$i]}"
  if [ "${results[$i]}" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
for line in "${newer_skipped[@]}"; do printf '  SKIP %s\n' "$line"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
