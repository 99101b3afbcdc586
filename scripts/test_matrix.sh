#!/usr/bin/env bash
# The whole selection matrix (test/matrix/, issue 50) on both MPIs: every documented selection x
# every program (matrix.c through the C API and through the drop-in; the drop-in's Fortran
# programs; the Fortran module's test) x every rank count (1 2 3 4 7, and 16 with Open MPI) x
# with and without emulated nodes. CI runs a sample of it (ctest -L matrix); this runs all of it.
#
#   bash scripts/test_matrix.sh
#
# Builds build/<flavour> first (scripts/common.sh's mpia_build) unless MPIA_MATRIX_NO_BUILD=1.
# Environment: MPIA_TEST_FLAVOURS (default "openmpi mpich"), MPIA_MATRIX_NPROCS_<flavour>
# (default "1 2 3 4 7 16" / "1 2 3 4 7"), MPIA_MATRIX_TIMEOUT (seconds per launch, default 300).
# Logs: build/test-logs/matrix-<flavour>.log. Exits non-zero when a launch failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck source=scripts/common.sh
. scripts/common.sh
mpia_mpi_env
export OMPI_MCA_coll_tuned_use_dynamic_rules="${OMPI_MCA_coll_tuned_use_dynamic_rules:-1}"
export OMPI_MCA_coll_tuned_alltoall_algorithm="${OMPI_MCA_coll_tuned_alltoall_algorithm:-1}"
python="$(mpia_python sys)" || exit 2
mkdir -p build/test-logs
status=0
for f in $(mpia_flavours); do
  dir="$(mpia_build_dir "$f")"
  if [ "${MPIA_MATRIX_NO_BUILD:-0}" != 1 ]; then
    mpia_build "$f" "" >"build/test-logs/matrix-build-$f.log" 2>&1 ||
      { mpia_log "build of $f failed: build/test-logs/matrix-build-$f.log"; status=1; continue; }
  fi
  var="MPIA_MATRIX_NPROCS_$f"
  default="1 2 3 4 7"
  [ "$f" = openmpi ] && default="1 2 3 4 7 16"
  programs=(--program "api:$dir/test/matrix/mpia_matrix_api"
            --program "preload:$dir/test/matrix/mpia_matrix_preload")
  for p in test/preload/fortran/mpia_preload_fortran_mpi test/preload/fortran/mpia_preload_fortran_f08 \
           test/preload/fortran/mpia_preload_fortran_requests_mpi \
           test/preload/fortran/mpia_preload_fortran_requests_f08; do
    [ -x "$dir/$p" ] && programs+=(--program "preload:$dir/$p")
  done
  [ -x "$dir/test/fortran/mpia_test_fortran_module" ] &&
    programs+=(--program "api:$dir/test/fortran/mpia_test_fortran_module")
  mpia_log "$f: the whole matrix (${#programs[@]} programs / 2), log build/test-logs/matrix-$f.log"
  "$python" test/matrix/run_matrix.py --mpiexec "$(command -v "$(mpia_mpiexec "$f")")" \
    --info "$dir/tools/mpia_info" --preload "$dir/src/libmpi_advance_preload.so" \
    --nprocs "${!var:-$default}" --nodes "none ppn:2" --timeout "${MPIA_MATRIX_TIMEOUT:-300}" \
    "${programs[@]}" 2>&1 | tee "build/test-logs/matrix-$f.log" | grep -v '^\[ok\]'
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done
exit "$status"
