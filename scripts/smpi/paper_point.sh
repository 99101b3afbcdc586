#!/usr/bin/env bash
# scripts/smpi/paper_point.sh -- one simulation on one of the papers' machines (machines/*.env):
#   bash scripts/smpi/paper_point.sh MACHINE P SIZES VARIANTS [mpia_bench options ...]
# e.g. bash scripts/smpi/paper_point.sh theta 2048 128 tra:radix=2,tra:radix=46
# MACHINE: theta, polaris, jupiter, epyc (scripts/smpi/machines/MACHINE.env: the platform, the
# CPU costs). The baseline (mpia_bench's MPI_Alltoall(v)) runs under SMPI's SELECTOR selection
# (default mpich: Cray MPICH's stand-in; ompi for Open MPI's). Environment: SELECTOR, OUT (the
# log and the CSV, default build/smpi/papers), MPIX_* (passed to the library), PAPER_TAG (a
# name for the log; default from the arguments), PAPER_TIMEOUT (s, default 3600), SMPI_EXTRA
# (more smpirun options, word-split: e.g. --cfg=smpi/alltoall:basic_linear for another baseline),
# SMPI_STATIC=1 (mpia_bench_static, the library linked in: no private copy of it per rank;
# 4.8 GB instead of 5.1 at P = 2048, 32 B), SMPI_MMAP=1 (the same executable, its globals
# privatized by SimGrid's mmap mode, which copies only its data per rank, not the whole file: at
# P = 1024, 32 B, 0.74 GB against 1.8 GB, 1.5-2x the wall time, the same simulated times).
# PAPER_FFT=1: seed 003's 1-D FFT instead (mpia_fft3d --1d: N = P^2 * M points, three alltoalls
# of M complex per block, sec. VI): SIZES is M (1: the paper's N = P^2, 16 B blocks; 64: N =
# 64 P^2, 1 KiB), VARIANTS its backends (system: MPI_Alltoall under SELECTOR; alltoall
# algorithms, auto). No computation is simulated (the lab's smpi/simulate-computation:no): its
# times are the transposes'.
# The build: cmake --preset smpi && cmake --build build/smpi -j2 --target mpia_bench
# (and mpia_bench_static, mpia_fft3d).
# Every result byte is checked by mpia_bench (--check-ends in the options: first and last only);
# mpia_fft3d checks a tone and every backend's round trip on every point.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
machine="$1" P="$2" sizes="$3" variants="$4"
shift 4
env="$root/scripts/smpi/machines/$machine.env"
[ -f "$env" ] || { echo "paper_point.sh: no $env" >&2; exit 2; }
# shellcheck source=scripts/smpi/machines/theta.env
. "$env"
Q="$SMPI_PPN" N=$((P / SMPI_PPN))
[ $((N * Q)) -eq "$P" ] || { echo "paper_point.sh: P = $P is not whole nodes of $Q" >&2; exit 2; }
# Each run writes its platform and keeps SMPI's private copies of the library in a directory of
# its own (smpirun puts those in $TMPDIR; its -tmpdir option is broken in 3.32): a shared one
# kept platforms written from older machine files or other ranks per node, and two runs at once
# loaded each other's library copies.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
smpi_platform_files "$N" "$tmp" "$env"
mapfile -t cfg < <(smpi_cfg_common)
out="${OUT:-$root/build/smpi/papers}"
mkdir -p "$out"
tag="${PAPER_TAG:-$machine-P$P-${PAPER_FFT:+fft1d-m}${sizes//,/_}-${variants//[,:=]/_}}"
sel="${SELECTOR:-mpich}"
echo "paper_point.sh: $machine P=$P ($N nodes x $Q) sizes $sizes variants $variants selector $sel -> $out/$tag.{log,csv}"
bench="$root/build/smpi/benchmarks/mpia_bench" lib=(--cfg=smpi/privatize-libs:"$root/build/smpi/src/libmpi_advance.so.0")
[ "${SMPI_STATIC:-0}" = 1 ] && bench="$root/build/smpi/benchmarks/mpia_bench_static" lib=()
# mmap privatization: the ranks share libc's exit handlers; mpia_bench then ends without them
# (MPIA_BENCH_QUICK_EXIT, bench_driver.cpp).
[ "${SMPI_MMAP:-0}" = 1 ] && bench="$root/build/smpi/benchmarks/mpia_bench_static" \
  lib=(--cfg=smpi/privatization:mmap) && export MPIA_BENCH_QUICK_EXIT=1
prog=("$bench" --variants "$variants" --sizes "$sizes" --iters 1 --warmup 0 --settle 0 --watchdog 0)
[ "${PAPER_FFT:-0}" = 1 ] && prog=("$root/build/smpi/benchmarks/fft3d/mpia_fft3d" --1d "$sizes"
  --backends "$variants" --iters 1 --warmup 1)
read -r -a extra <<<"${SMPI_EXTRA:-}"
start=$(date +%s)
# The peak memory, where GNU time is installed (Debian's "time"; not needed).
timed=()
[ -x /usr/bin/time ] && timed=(/usr/bin/time -f "paper_point.sh: max RSS %M KiB, %e s")
TMPDIR="$tmp" MPIX_LOCALITY="ppn:$Q" "${timed[@]}" \
  timeout "${PAPER_TIMEOUT:-3600}" smpirun -platform "$xml" -hostfile "$hosts" -np "$P" "${cfg[@]}" \
  --cfg=surf/precision:1e-8 --cfg=smpi/coll-selector:"$sel" "${extra[@]}" \
  "${lib[@]}" "${prog[@]}" --csv "$out/$tag.csv" "$@" >"$out/$tag.log" 2>&1 ||
  { echo "paper_point.sh: FAILED ($?), see $out/$tag.log" >&2; tail -5 "$out/$tag.log" >&2; exit 1; }
grep -E '^ *([a-z_0-9]+ +)?[0-9]+ +[A-Za-z]' "$out/$tag.log" || true
[ "${PAPER_FFT:-0}" = 1 ] && sed -n '/^check /p;/^backend /,/^(times/p' "$out/$tag.log"
tail -1 "$out/$tag.log"
echo "paper_point.sh: $(($(date +%s) - start)) s wall"
