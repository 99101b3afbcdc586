#!/usr/bin/env bash
# Installed-package test: install a built tree into a temporary prefix, then build small C,
# C++ and (when the tree has the Fortran module) Fortran programs against the *installed*
# package, with CMake (find_package(MPIAdvance)) and with pkg-config (mpicc $(pkg-config
# --cflags --libs mpi_advance)), and run each at 2 ranks; and run an unmodified program under
# the installed drop-in library (lib/libmpi_advance_preload.so).
#
#   test/install/run_consumer_test.sh <build-dir> <openmpi|mpich>
#
# Exit 0 when everything passes, 1 on a failure, 77 when the build is a sanitizer build
# (a consumer of a sanitized library would have to be sanitized too; not tested here).
# MPIA_KEEP_TMP=1 keeps the temporary prefix and consumer builds for inspection.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/common.sh
. "$here/../../scripts/common.sh"

if [ $# -ne 2 ]; then
  echo "usage: $0 <build-dir> <openmpi|mpich>" >&2
  exit 2
fi
build="$(cd "$1" && pwd)"
flavour="$2"
mpia_check_flavour "$flavour"
mpia_have_flavour "$flavour" || { echo "FAIL: $flavour is not installed" >&2; exit 1; }
mpia_mpi_env

MPICC="$(command -v "$(mpia_mpicc "$flavour")")"
MPICXX="$(command -v "$(mpia_mpicxx "$flavour")")"
MPIEXEC="$(command -v "$(mpia_mpiexec "$flavour")")"
case "$(mpia_family "$flavour")" in
  openmpi) signature="Open MPI" ;;
  mpich)   signature="MPICH" ;;
esac

[ -f "$build/CMakeCache.txt" ] || { echo "FAIL: $build is not a CMake build tree" >&2; exit 1; }
if grep -q '^MPIA_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "SKIP: $build is a sanitizer build" >&2
  exit 77
fi
# The build tree must be of the flavour asked for, or the test proves nothing.
if ! grep -q "^MPI_C_COMPILER:[A-Z]*=.*$(basename "$MPICC")\$" "$build/CMakeCache.txt"; then
  echo "FAIL: $build was not configured with $(basename "$MPICC"):" >&2
  grep '^MPI_C_COMPILER:' "$build/CMakeCache.txt" >&2 || true
  exit 1
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/mpia-install-$flavour.XXXXXX")"
if [ "${MPIA_KEEP_TMP:-0}" = 1 ]; then
  echo "keeping $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi
prefix="$tmp/prefix"
failures=0
step() { printf '\n=== [install/%s] %s\n' "$flavour" "$*"; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
run2() { # run2 <exe> <label>: run at 2 ranks; want exit 0, one 2-rank world, PASS, our MPI
  local out rc=0
  out="$(timeout 120 "$MPIEXEC" -n 2 "$1" 2>&1)" || rc=$?
  printf '%s\n' "$out"
  if [ "$rc" -ne 0 ]; then
    fail "$2: exit status $rc at 2 ranks"
  elif ! grep -q "consumer: 2 ranks" <<<"$out" || ! grep -q "PASS" <<<"$out"; then
    fail "$2: no '2 ranks ... PASS' line (launched as singletons by the wrong mpiexec?)"
  elif grep -q "MPI: " <<<"$out" && ! grep -q "MPI: .*$signature" <<<"$out"; then
    fail "$2: ran on the wrong MPI (want $signature)"
  else
    echo "ok  $2"
  fi
}

step "cmake --install $build --prefix $prefix"
# Make sure the library is built (a no-op when it is), then install.
cmake --build "$build" -j "$MPIA_JOBS" >/dev/null
cmake --install "$build" --prefix "$prefix"

step "installed layout"
libdir=""
for d in "$prefix"/lib "$prefix"/lib64 "$prefix"/lib/*-linux-gnu; do
  if [ -e "$d/libmpi_advance.so" ]; then libdir="$d"; break; fi
done
if [ -z "$libdir" ]; then
  fail "no libmpi_advance.so under $prefix"
  find "$prefix" >&2
  exit 1
fi
for f in "$prefix/include/mpi_advance.h" "$libdir/libmpi_advance.a" \
         "$libdir/cmake/MPIAdvance/MPIAdvanceConfig.cmake" \
         "$libdir/cmake/MPIAdvance/MPIAdvanceConfigVersion.cmake" \
         "$libdir/cmake/MPIAdvance/MPIAdvanceTargets.cmake" \
         "$libdir/pkgconfig/mpi_advance.pc"; do
  if [ -e "$f" ]; then echo "ok  ${f#"$prefix"/}"; else fail "missing ${f#"$prefix"/}"; fi
done
if grep -rq "$build\|$MPIA_ROOT/src" "$libdir/cmake/MPIAdvance" "$libdir/pkgconfig/mpi_advance.pc"; then
  fail "installed package files refer to the build or source tree"
fi
ls -l "$libdir"/libmpi_advance.*

step "exported symbols of libmpi_advance.so (MPIA_* in MPIA_1, private ones in MPIA_PRIVATE)"
# Defined, global, dynamic symbols with their version (name@@VERSION); the linker's own (_init,
# _fini, _edata, ...) and the version nodes themselves (type A) aside. The C API is MPIA_* in
# node MPIA_1; the drop-in's and the tests' entry points (src/api/mpia_private.h) are
# mpia_private_* in node MPIA_PRIVATE, apart from the ABI.
versioned="$(nm -D --defined-only "$libdir/libmpi_advance.so" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' |
             grep -Ev '^(_init|_fini|_edata|_end|__bss_start)(@|$)' || true)"
printf '%s\n' "$versioned" | grep -E '^(MPIA_[A-Za-z0-9_]+@@MPIA_1|mpia_private_[a-z_]+@@MPIA_PRIVATE)$' |
  sed 's/^/ok  /'
others="$(printf '%s\n' "$versioned" | grep -v '^$' |
          grep -Ev '^(MPIA_[A-Za-z0-9_]+@@MPIA_1|mpia_private_[a-z_]+@@MPIA_PRIVATE)$' || true)"
if [ -n "$others" ]; then
  printf '%s\n' "$others" | sed 's/^/??  /'
  fail "libmpi_advance.so exports symbols other than MPIA_* (MPIA_1) and mpia_private_* (MPIA_PRIVATE)"
fi
syms="$(printf '%s\n' "$versioned" | sed 's/@.*//')"
# The library is C++ but must only need the MPI C library: compiled without OMPI_SKIP_MPICXX /
# MPICH_SKIP_MPICXX, <mpi.h> drags in the MPI C++ bindings and the .so ends up needing
# libmpi_cxx / libmpichcxx symbols that a C program linked with mpicc does not have.
cxxb="$(nm -DC --undefined-only "$libdir/libmpi_advance.so" | awk '{print $2}' |
        grep -E '^(MPI::|ompi_mpi_cxx_)' | sort -u | head -5 || true)"
if [ -n "$cxxb" ]; then
  printf '%s\n' "$cxxb" | sed 's/^/??  needs /'
  fail "libmpi_advance.so needs the MPI C++ bindings (build it with -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX)"
fi
# (Here-strings, not "| grep -q": under pipefail an early grep exit can fail the writer with
# SIGPIPE, which made the ldd check below fail at random.)
if grep -q '^MPIX_' <<<"$syms"; then
  fail "libmpi_advance.so exports MPIX_* symbols (would clash with Open MPI's libmpi)"
fi

# Open MPI ships <mpi-ext.h> with its own MPIX_Alltoall_init: include it first in one build.
with_ext=OFF
if [ "$(mpia_family "$flavour")" = openmpi ] && printf "#include <mpi.h>\n#include <mpi-ext.h>\n" | "$MPICC" -E -x c - >/dev/null 2>&1; then
  with_ext=ON
fi

step "CMake consumer (find_package(MPIAdvance), MPI = $(basename "$MPICC"), mpi-ext.h: $with_ext)"
cbuild="$tmp/cmake-consumer"
if cmake -S "$here/consumer" -B "$cbuild" -DCMAKE_PREFIX_PATH="$prefix" \
     -DCMAKE_BUILD_TYPE=RelWithDebInfo \
     -DMPI_C_COMPILER="$MPICC" -DMPI_CXX_COMPILER="$MPICXX" \
     -DCONSUMER_WITH_MPI_EXT="$with_ext" &&
   cmake --build "$cbuild" -j "$MPIA_JOBS"; then
  run2 "$cbuild/consumer_c" "cmake C (shared)"
  run2 "$cbuild/consumer_c_static" "cmake C (static)"
  run2 "$cbuild/consumer_cxx" "cmake C++ (shared)"
  if grep -q "$libdir/libmpi_advance.so" <<<"$(ldd "$cbuild/consumer_c")"; then
    echo "ok  consumer_c uses the installed libmpi_advance.so"
  else
    fail "consumer_c does not load the installed libmpi_advance.so"; ldd "$cbuild/consumer_c"
  fi
  if grep -q libmpi_advance <<<"$(ldd "$cbuild/consumer_c_static")"; then
    fail "consumer_c_static links libmpi_advance.so dynamically"
  fi
else
  fail "CMake consumer did not configure/build"
fi

step "CMake consumer without MPI hints (the package must pick the MPI it was built with)"
cbuild2="$tmp/cmake-consumer-nohint"
if cmake -S "$here/consumer" -B "$cbuild2" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/nohint.log" 2>&1 &&
   cmake --build "$cbuild2" --target consumer_c -j "$MPIA_JOBS" >>"$tmp/nohint.log" 2>&1; then
  grep 'MPIAdvance\|MPI C compiler' "$tmp/nohint.log" || true
  if grep -q "^MPI_C_COMPILER:[A-Z]*=$MPICC\$" "$cbuild2/CMakeCache.txt"; then
    run2 "$cbuild2/consumer_c" "cmake C (no MPI hint)"
  else
    fail "find_package(MPIAdvance) without hints chose $(grep '^MPI_C_COMPILER:' "$cbuild2/CMakeCache.txt")"
  fi
else
  cat "$tmp/nohint.log"
  fail "CMake consumer without MPI hints did not configure/build"
fi

step "pkg-config consumer ($(basename "$MPICC") \$(pkg-config --cflags --libs mpi_advance))"
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pkg-config --print-errors --exists mpi_advance || fail "pkg-config cannot find mpi_advance"
echo "cflags: $(pkg-config --cflags mpi_advance)"
echo "libs:   $(pkg-config --libs mpi_advance)"
echo "static: $(pkg-config --static --libs mpi_advance)"
[ "$(pkg-config --modversion mpi_advance)" = "$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")" ] ||
  fail "pkg-config version $(pkg-config --modversion mpi_advance) differs from the project's"
[ "$(pkg-config --variable=mpicc mpi_advance)" = "$MPICC" ] ||
  fail "pkg-config mpicc variable is '$(pkg-config --variable=mpicc mpi_advance)', want $MPICC"
pbuild="$tmp/pkgconfig-consumer"
mkdir -p "$pbuild"
rpath="-Wl,-rpath,$libdir"
# shellcheck disable=SC2046
if "$MPICC" -std=c99 -O2 -o "$pbuild/consumer_c" "$here/consumer/consumer.c" \
     $(pkg-config --cflags --libs mpi_advance) "$rpath"; then
  run2 "$pbuild/consumer_c" "pkg-config C (shared)"
else
  fail "pkg-config C consumer did not build"
fi
# shellcheck disable=SC2046
if "$MPICXX" -std=c++11 -O2 -o "$pbuild/consumer_cxx" "$here/consumer/consumer.cpp" \
     $(pkg-config --cflags --libs mpi_advance) "$rpath"; then
  run2 "$pbuild/consumer_cxx" "pkg-config C++ (shared)"
else
  fail "pkg-config C++ consumer did not build"
fi
# Static archive from C: the archive, then Libs.private (the C++ runtime) from --static.
# shellcheck disable=SC2046
if "$MPICC" -std=c99 -O2 -o "$pbuild/consumer_c_static" "$here/consumer/consumer.c" \
     $(pkg-config --cflags mpi_advance) $(pkg-config --libs-only-L mpi_advance) \
     -l:libmpi_advance.a $(pkg-config --static --libs-only-l mpi_advance | sed 's/-lmpi_advance\b//'); then
  run2 "$pbuild/consumer_c_static" "pkg-config C (static)"
else
  fail "pkg-config static C consumer did not build"
fi

# The Fortran module, when this tree built it: a Fortran-only CMake project and mpif90 with
# pkg-config, both against the installed .mod files.
if [ -e "$libdir/libmpi_advance_fortran.so" ]; then
  MPIFC="$(sed -n 's/^MPI_Fortran_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")"
  step "Fortran consumers (use mpi_advance; $(basename "$MPIFC"))"
  [ -e "$prefix/include/mpi_advance/fortran/mpi_advance.mod" ] || fail "missing include/mpi_advance/fortran/mpi_advance.mod"
  fbuild="$tmp/cmake-consumer-fortran"
  if cmake -S "$here/consumer_fortran" -B "$fbuild" -DCMAKE_PREFIX_PATH="$prefix" \
       -DMPI_C_COMPILER="$MPICC" -DMPI_Fortran_COMPILER="$MPIFC" >"$tmp/fortran.log" 2>&1 &&
     cmake --build "$fbuild" >>"$tmp/fortran.log" 2>&1; then
    run2 "$fbuild/consumer_fortran" "cmake Fortran (shared)"
  else
    cat "$tmp/fortran.log"
    fail "CMake Fortran consumer did not configure/build"
  fi
  [ "$(pkg-config --variable=mpifort mpi_advance_fortran)" = "$MPIFC" ] ||
    fail "pkg-config mpifort variable is '$(pkg-config --variable=mpifort mpi_advance_fortran)', want $MPIFC"
  # shellcheck disable=SC2046
  if "$MPIFC" -O2 -o "$pbuild/consumer_fortran" "$here/consumer_fortran/consumer.f90" \
       $(pkg-config --cflags --libs mpi_advance_fortran) "$rpath"; then
    run2 "$pbuild/consumer_fortran" "pkg-config Fortran (shared)"
  else
    fail "pkg-config Fortran consumer did not build"
  fi
else
  echo "(no Fortran module in this build: Fortran consumers skipped)"
fi

# The installed benchmark, where the build has it: --help, and a short run at 2 ranks that
# checks every byte (it exits non-zero on a wrong one) and writes its CSV.
step "installed benchmark (bin/mpia_bench)"
if [ -e "$build/benchmarks/mpia_bench" ]; then
  if [ ! -x "$prefix/bin/mpia_bench" ]; then
    fail "missing bin/mpia_bench"
  elif ! grep -q '^usage: mpia_bench' <<<"$("$prefix/bin/mpia_bench" --help 2>&1)"; then
    fail "bin/mpia_bench --help"
  elif ! timeout 300 "$MPIEXEC" -n 2 "$prefix/bin/mpia_bench" --quick --csv "$tmp/bench.csv" \
    >"$tmp/bench.log" 2>&1 || [ "$(wc -l <"$tmp/bench.csv")" -lt 2 ]; then
    tail -20 "$tmp/bench.log"
    fail "bin/mpia_bench --quick at 2 ranks"
  else
    echo "ok  mpia_bench --quick at 2 ranks: $(($(wc -l <"$tmp/bench.csv") - 1)) CSV rows"
  fi
else
  echo "(no benchmarks in this build: bin/mpia_bench skipped)"
fi

# The API reference's man pages, where the build made them (Doxygen found: MPIA_BUILD_DOCS).
step "man pages (share/man/man3)"
if [ -e "$build/docs/api/man/man3/mpi_advance.h.3" ]; then
  page="$prefix/share/man/man3/MPIX_Alltoall_init.3"
  if [ ! -e "$page" ]; then
    fail "missing share/man/man3/MPIX_Alltoall_init.3"
  elif command -v man >/dev/null && ! man -M "$prefix/share/man" 3 MPIX_Alltoall_init 2>/dev/null |
    grep -q 'int MPIA_Alltoall_init'; then
    fail "man 3 MPIX_Alltoall_init does not show MPIA_Alltoall_init"
  else
    echo "ok  man 3 MPIX_Alltoall_init ($(ls "$prefix/share/man/man3" | wc -l) pages)"
  fi
else
  echo "(no Doxygen in this build: man pages skipped)"
fi

# The installed tools, each mode and exit status (tools/test_mpia_info.sh).
step "installed tools (bin/mpia_info)"
if [ -x "$prefix/bin/mpia_info" ]; then
  bash "$here/../../tools/test_mpia_info.sh" "$prefix/bin/mpia_info" ||
    fail "the installed mpia_info does not do what it promises"
else
  fail "missing bin/mpia_info"
fi

# The calibration command: measures at 4 ranks on two emulated nodes, writes a tuning file the
# installed library reads (tools/test_mpia_tune.sh; the comparison with calibrate.py needs the
# build tree's mpia_model).
step "installed tools (bin/mpia_tune)"
if [ -x "$prefix/bin/mpia_tune" ]; then
  MPIEXEC="$MPIEXEC" bash "$here/../../tools/test_mpia_tune.sh" "$prefix/bin/mpia_tune" \
    "$prefix/bin/mpia_info" "$build/benchmarks/mpia_model" ||
    fail "the installed mpia_tune does not do what it promises"
else
  fail "missing bin/mpia_tune"
fi

# The drop-in library from the installed tree, under an unmodified program.
step "preload (LD_PRELOAD=lib/libmpi_advance_preload.so, MPIX_REPORT=1)"
if [ -e "$libdir/libmpi_advance_preload.so" ]; then
  if "$MPICC" -O1 -o "$pbuild/preload_app" "$here/../preload/preload_app.c"; then
    if out="$(MPIX_REPORT=1 bash "$here/../preload/run_preload.sh" "$MPIEXEC" 2 \
                "$libdir/libmpi_advance_preload.so" "$pbuild/preload_app" \
                --expect '^PASS$' --expect 'MPI_Alltoallv ranks=2 calls=[0-9]+ .*algorithm=[a-rt-z]' 2>&1)"; then
      echo "ok  preload: $(grep -c '^mpi-advance: ' <<<"$out") report lines"
    else
      printf '%s\n' "$out"
      fail "the installed preload did not run the unmodified program on mpi-advance"
    fi
  else
    fail "preload test program did not build"
  fi
else
  fail "missing lib/libmpi_advance_preload.so"
fi

echo
if [ "$failures" -eq 0 ]; then
  echo "install/$flavour: PASS"
  exit 0
fi
echo "install/$flavour: FAIL ($failures failures)"
exit 1
