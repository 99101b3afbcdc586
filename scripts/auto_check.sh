#!/usr/bin/env bash
# scripts/auto_check.sh -- is `auto` right on YOUR machine? Times every algorithm of ours, the
# persistent `auto` request after its measured trial (settled in the warm-up: at most 241 starts)
# and `auto` without measuring (MPIX_AUTO=model), for alltoall and alltoallv, side by side in one
# launch per collective (variants rotated over rounds, every result checked byte by byte by
# mpia_bench), and prints per point the best of ours, auto measured / best, auto model / best and
# the MPI library's own / best, then how many points are within 5 and 10 %
# (scripts/smpi/trial_report.py --bench).
#
# Run it inside an allocation, with your launcher:
#   MPIA_LAUNCH="mpirun -np 16 --bind-to core" bash scripts/auto_check.sh
#   MPIA_LAUNCH="srun -n 256" MPIA_CHECK_NAME=mycluster bash scripts/auto_check.sh
# Nodes are what MPI_Comm_split_type finds, or MPIX_LOCALITY=ppn:Q (emulated, exported by you).
# Four launches; at P = 16 on 16 cores about a minute in all.
#
# Environment:
#   MPIA_LAUNCH          the launcher and its arguments, word-split (required)
#   MPIA_BUILD           the build tree with benchmarks/mpia_bench (default build/openmpi)
#   MPIA_CHECK_OUT       output directory (default results/auto_check): a2a.csv, a2a_model.csv,
#                        a2av.csv, a2av_model.csv (mpia_bench's CSVs), their .log, report.md
#   MPIA_CHECK_NAME      the machine's name in the report (default "here")
#   MPIA_CHECK_SIZES     alltoall block bytes (default 8,64,512,4096,32768; "" skips alltoall)
#   MPIA_CHECK_V_SIZES   alltoallv mean block bytes (default 8,512,4096; "" skips alltoallv)
#   MPIA_CHECK_PATTERNS  alltoallv count patterns (default uniform,skewed,sparse,power_law,
#                        hotspot,tuna: mpia_bench --help)
#   MPIA_CHECK_ARGS      timing options (default "--rounds 5 --iters 500 --warmup 250": each round
#                        a new request, whose trial settles within the warm-up starts: its bound
#                        is 241)
#   MPIA_CHECK_TIMEOUT   seconds one launch may take (default 900)
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/common.sh
. "$here/common.sh"
die() { mpia_log "auto_check: $*"; exit 1; }

[ -n "${MPIA_LAUNCH:-}" ] || die "set MPIA_LAUNCH to your launcher, e.g. MPIA_LAUNCH=\"mpirun -np 16\""
read -r -a launch <<<"$MPIA_LAUNCH"
bench="${MPIA_BUILD:-$MPIA_ROOT/build/openmpi}/benchmarks/mpia_bench"
[ -x "$bench" ] || die "$bench not found: build with -DMPIA_BUILD_BENCHMARKS=ON and set MPIA_BUILD"
out="${MPIA_CHECK_OUT:-$MPIA_ROOT/results/auto_check}"
mkdir -p "$out" || die "cannot create $out"
name="${MPIA_CHECK_NAME:-here}"
read -r -a timing <<<"${MPIA_CHECK_ARGS:---rounds 5 --iters 500 --warmup 250}"

# run NAME [NAME=VALUE...] -- MPIA_BENCH_ARGS...: one launch, its CSV and log in $out.
run() {
  local tag="$1" t0=$SECONDS envs=()
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  mpia_log "$tag: ${envs[*]} ${launch[*]} mpia_bench $*"
  mpia_run_bench "$out/$tag" "${MPIA_CHECK_TIMEOUT:-900}" env "${envs[@]}" "${launch[@]}" "$bench" \
    "$@" "${timing[@]}" || die "running $tag"
  mpia_log "$tag: $((SECONDS - t0)) s"
}

specs=()
sizes="${MPIA_CHECK_SIZES-8,64,512,4096,32768}"
if [ -n "$sizes" ]; then
  run a2a MPIX_REPORT=1 -- --collective alltoall --sizes "$sizes"
  run a2a_model MPIX_AUTO=model -- --collective alltoall --sizes "$sizes" --variants auto
  specs+=(--bench "$name=$out/a2a.csv,$out/a2a_model.csv")
fi
vsizes="${MPIA_CHECK_V_SIZES-8,512,4096}"
if [ -n "$vsizes" ]; then
  v=(--collective alltoallv --patterns "${MPIA_CHECK_PATTERNS:-uniform,skewed,sparse,power_law,hotspot,tuna}" --sizes "$vsizes")
  run a2av MPIX_REPORT=1 -- "${v[@]}"
  run a2av_model MPIX_AUTO=model -- "${v[@]}" --variants auto
  specs+=(--bench "$name=$out/a2av.csv,$out/a2av_model.csv")
fi
[ ${#specs[@]} -gt 0 ] || die "nothing to run (MPIA_CHECK_SIZES and MPIA_CHECK_V_SIZES are empty)"
py="$(command -v /usr/bin/python3 || command -v python3)" || die "no python3"
"$py" "$here/smpi/trial_report.py" "${specs[@]}" | tee "$out/report.md"
echo "auto_check: what each trial tried and chose: grep chose $out/a2a.log $out/a2av.log"
