# shellcheck shell=bash
# Shared helpers of scripts/*.sh: MPI flavours, the Open MPI environment, configure + build.
# Source it (". scripts/common.sh"); it sets no shell options and never exits the caller.
#
#   mpia_flavours                    flavours to use: $MPIA_TEST_FLAVOURS or "openmpi mpich"
#   mpia_mpicc / mpia_mpicxx / mpia_mpiexec FLAVOUR
#                                    the wrappers: Debian's names (mpicc.openmpi, mpiexec.mpich)
#                                    or, for openmpi5 and mpich4, paths in the prefix that
#                                    scripts/newer_mpis.sh built (mpia_newer_prefix)
#   mpia_family FLAVOUR              openmpi or mpich
#   mpia_mpi_env                     export a sane Open MPI run environment
#   mpia_sanitizer_env               export ASan/UBSan/LSan options (+ test/lsan.supp);
#                                    MPI programs append $MPIA_ASAN_MPI_OPTIONS to ASAN_OPTIONS
#   mpia_build_dir FLAVOUR [VARIANT] build/<flavour>[-<variant>]  (variant: "" or asan)
#   mpia_configure FLAVOUR [VARIANT] [cmake args...]
#   mpia_build     FLAVOUR [VARIANT] [cmake args...]   configure, then build -j$MPIA_JOBS (2)
#   mpia_python [MODULE...]          print the first Python 3 that imports the modules (default
#                                    numpy): $MPIA_PYTHON, /usr/bin/python3, then python3 on PATH
#   mpia_run_bench BASE SECONDS COMMAND...
#                                    one mpia_bench launch (COMMAND: [env ...] launcher
#                                    mpia_bench args) with --csv BASE.csv, its output in BASE.log;
#                                    returns 1, saying why, when it fails, times out or finds a
#                                    wrong result

MPIA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${MPIA_JOBS:=2}"

mpia_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# The interpreter for the scripts that need numpy (scripts/calibrate.py) or matplotlib (the
# plots): the distribution's /usr/bin/python3 first, which sees python3-numpy and
# python3-matplotlib (scripts/setup.sh installs them), where the python3 first on PATH may be a
# separate installation (/usr/local/bin) that does not. $MPIA_PYTHON, when set, is tried first.
# Prints the path and returns 0, or returns 1 with a hint on stderr.
mpia_python() {
  local mods=("$@") p imports
  [ ${#mods[@]} -gt 0 ] || mods=(numpy)
  imports="import $(IFS=,; printf '%s' "${mods[*]}")"
  for p in ${MPIA_PYTHON:+"$MPIA_PYTHON"} /usr/bin/python3 python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    if "$p" -c "$imports" >/dev/null 2>&1; then
      command -v "$p"
      return 0
    fi
  done
  mpia_log "no python3 with ${mods[*]} (run scripts/setup.sh: python3-numpy python3-matplotlib)"
  return 1
}

# The MPI flavours: Debian's packages (openmpi: Open MPI 4.1, mpich: MPICH 4.0; wrappers
# mpicc.openmpi, mpiexec.mpich...) and the newer MPIs scripts/newer_mpis.sh builds into its
# cache (openmpi5: Open MPI 5.0.x, mpich4: MPICH 4.2+; wrappers in the prefix's bin/).
# Succeed if the flavour name is valid, fail (saying so) otherwise.
mpia_check_flavour() {
  case "$1" in
    openmpi|mpich|openmpi5|mpich4) return 0 ;;
    *) mpia_log "unknown MPI flavour '$1' (use openmpi, mpich, openmpi5 or mpich4)"; return 1 ;;
  esac
}

# The implementation a flavour is: openmpi or mpich.
mpia_family() {
  case "$1" in
    openmpi|openmpi5) echo openmpi ;;
    mpich|mpich4) echo mpich ;;
    *) mpia_check_flavour "$1" ;;
  esac
}

# A newer flavour's installed prefix (scripts/newer_mpis.sh --print-prefix), or fail.
mpia_newer_prefix() {
  case "$1" in
    openmpi5) bash "$MPIA_ROOT/scripts/newer_mpis.sh" --print-prefix openmpi 2>/dev/null ;;
    mpich4) bash "$MPIA_ROOT/scripts/newer_mpis.sh" --print-prefix mpich 2>/dev/null ;;
    *) return 1 ;;
  esac
}

# mpia_wrapper FLAVOUR TOOL: the command of TOOL (mpicc, mpicxx, mpifort, mpiexec) of a flavour
# (a path for the newer ones; a path that does not exist when that MPI is not built).
mpia_wrapper() {
  local prefix
  case "$1" in
    openmpi|mpich) printf '%s.%s\n' "$2" "$1" ;;
    openmpi5|mpich4)
      prefix="$(mpia_newer_prefix "$1")" || prefix="/nonexistent/$1"
      printf '%s/bin/%s\n' "$prefix" "$2" ;;
    *) mpia_check_flavour "$1" ;;
  esac
}

# The flavours to build/test, from MPIA_TEST_FLAVOURS (space or comma separated).
mpia_flavours() {
  local list="${MPIA_TEST_FLAVOURS:-openmpi mpich}" f
  for f in ${list//,/ }; do
    mpia_check_flavour "$f" || return 1
    printf '%s\n' "$f"
  done
}

mpia_mpicc()   { mpia_check_flavour "$1" && mpia_wrapper "$1" mpicc; }
mpia_mpicxx()  { mpia_check_flavour "$1" && mpia_wrapper "$1" mpicxx; }
mpia_mpiexec() { mpia_check_flavour "$1" && mpia_wrapper "$1" mpiexec; }

# True when the flavour's wrappers and launcher are installed.
mpia_have_flavour() {
  local t
  for t in "$(mpia_mpicc "$1")" "$(mpia_mpicxx "$1")" "$(mpia_mpiexec "$1")"; do
    command -v "$t" >/dev/null 2>&1 || return 1
  done
}

# A sane Open MPI environment for containers and small machines: allow root, oversubscribe
# (tests run up to 16 ranks on 2 cores), yield when idle, no binding, shared memory + self
# only. Values already in the environment win. Harmless for MPICH.
mpia_mpi_env() {
  export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT:-1}"
  export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}"
  export OMPI_MCA_rmaps_base_oversubscribe="${OMPI_MCA_rmaps_base_oversubscribe:-1}"
  # Open MPI 5's launcher (PRRTE) ignores the ORTE variable above: its own (measured on 5.0.10:
  # without it or --oversubscribe, "not enough slots" beyond the cores).
  export PRTE_MCA_rmaps_default_mapping_policy="${PRTE_MCA_rmaps_default_mapping_policy:-:oversubscribe}"
  export OMPI_MCA_mpi_yield_when_idle="${OMPI_MCA_mpi_yield_when_idle:-1}"
  export OMPI_MCA_hwloc_base_binding_policy="${OMPI_MCA_hwloc_base_binding_policy:-none}"
  export OMPI_MCA_btl="${OMPI_MCA_btl:-self,vader}"
  export OMPI_MCA_pml="${OMPI_MCA_pml:-ob1}"
}

# ASan + UBSan + LSan for an MPIA_SANITIZE build. LSan also reports what the MPI library
# itself never frees; test/lsan.supp suppresses those (and only those). Values already in the
# environment win.
#
# MPI programs additionally need MPIA_ASAN_MPI_OPTIONS (fast_unwind_on_malloc=0) appended to
# ASAN_OPTIONS: MPI's libraries are built without frame pointers, so the default (fast)
# unwinder records one frame per allocation, and Open MPI 4 unloads its MCA components
# (dlclose) before the leak report, leaving that frame "<unknown module>" and unsuppressible.
# Full unwinding reaches libmpi. It makes every malloc slower, hence not for in-process tests.
# shellcheck disable=SC2034  # used by the scripts that source this file
MPIA_ASAN_MPI_OPTIONS="fast_unwind_on_malloc=0"
mpia_sanitizer_env() {
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$MPIA_ROOT/test/lsan.supp:print_suppressions=0}"
}

mpia_build_dir() {
  mpia_check_flavour "$1" || return 1
  printf '%s/build/%s%s\n' "$MPIA_ROOT" "$1" "${2:+-$2}"
}

mpia_configure() {
  local flavour="$1" variant="${2:-}"
  shift; [ $# -gt 0 ] && shift
  local dir extra=()
  dir="$(mpia_build_dir "$flavour" "$variant")" || return 1
  mpia_have_flavour "$flavour" || { mpia_log "$flavour is not installed (run scripts/setup.sh)"; return 1; }
  case "$variant" in
    "") ;;
    # -O1, as the sanitizers' own documentation advises: a quarter less compile time than the
    # default -O2 (test_neighbor.cpp: 69 s against 92 s), the stage's largest part.
    asan) extra+=(-DMPIA_SANITIZE=ON "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG"
                  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG") ;;
    *) mpia_log "unknown build variant '$variant' (use '' or asan)"; return 1 ;;
  esac
  mpia_log "configure $flavour${variant:+ ($variant)} in ${dir#"$MPIA_ROOT"/}"
  cmake -S "$MPIA_ROOT" -B "$dir" \
    -DMPI_C_COMPILER="$(command -v "$(mpia_mpicc "$flavour")")" \
    -DMPI_CXX_COMPILER="$(command -v "$(mpia_mpicxx "$flavour")")" \
    -DMPIEXEC_EXECUTABLE="$(command -v "$(mpia_mpiexec "$flavour")")" \
    "${extra[@]}" "$@"
}

mpia_build() {
  local flavour="$1" variant="${2:-}"
  shift; [ $# -gt 0 ] && shift
  mpia_configure "$flavour" "$variant" "$@" || return 1
  mpia_log "build $flavour${variant:+ ($variant)} with -j$MPIA_JOBS"
  cmake --build "$(mpia_build_dir "$flavour" "$variant")" -j "$MPIA_JOBS"
}

mpia_run_bench() {
  local base="$1" seconds="$2"
  shift 2
  if ! timeout --kill-after=30 "$seconds" "$@" --csv "$base.csv" >"$base.log" 2>&1; then
    tail -n 20 "$base.log" >&2
    mpia_log "the run $(basename "$base") failed (log: $base.log)"
    return 1
  fi
  if grep -qE 'FATAL|WRONG RESULT' "$base.log"; then
    grep -E 'FATAL|WRONG RESULT' "$base.log" >&2
    mpia_log "mpia_bench found a wrong result in $(basename "$base")"
    return 1
  fi
}

# Per callgrind dump in OUTDIR (cg.out.*, one a call, named by the client request that made it):
# "name total in_mpi" -- the dump's total instructions and the inclusive cost of the MPI
# library's entry points (MPI_x / PMPI_x; Open MPI and MPICH export one function under both
# names, counted once), leaving out the MPI functions named in SKIP (a regular expression, e.g.
# the harness's own "^MPI_Barrier$"). Used by scripts/perf_persistent.sh and test/perf.
mpia_callgrind_counts() { # mpia_callgrind_counts OUTDIR [SKIP]
  local out="$1" skip="${2:-^$}" file name total mpi
  for file in $(ls "$out"/cg.out.* 2>/dev/null | sort -V); do
    name="$(sed -n 's/^desc: Trigger: Client Request: //p' "$file")"
    [ -n "$name" ] || continue
    total="$(sed -n 's/^summary: //p;s/^totals: //p' "$file" | head -1 | awk '{print $1}')"
    mpi="$(callgrind_annotate --inclusive=yes --threshold=100 "$file" 2>/dev/null |
      awk -v skip="$skip" '/:P?MPI_[A-Z][a-z_]*( |$)/ {
             gsub(",", "", $1); n = $0; sub(/^[^:]*:/, "", n); sub(/ .*/, "", n); sub(/^P/, "", n);
             if (n !~ /^MPI_[A-Z][a-z_]*$/ || n ~ skip) next
             if (!(n in c) || $1 + 0 > c[n]) c[n] = $1 + 0 }
           END { s = 0; for (k in c) s += c[k]; print s }')"
    printf '%s %s %s\n' "${name%#*}" "$total" "$mpi"
  done
}
