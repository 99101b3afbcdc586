#!/usr/bin/env bash
# scripts/smpi/noise.sh -- auto under noise, simulated (issue 38): on each simulated machine
# kind, per (collective, P, block size), ONE simulation times every candidate we name, the MPI
# library's own call (SMPI's: the baseline MPI_<Call>, and the `system` record) and the persistent
# auto request after its trial, all under the same noise:
#   - arrival noise (mpia_bench --noise-rel): before every start of every variant -- the trial's
#     included -- each rank waits a seeded heavy-tailed delay (exponential, one in ten ten times
#     longer) of mean NOISE_ARRIVAL x the noiseless time of MPI_<Call> at that size;
#   - per-message jitter (mpia_bench --jitter): every message's latency, SMPI's own collectives'
#     included, times 1 + a seeded heavy-tailed draw of mean NOISE_JITTER (SimGrid's network
#     model's latency-factor callback, which replaces smpi/lat-factor: the kind's own factors are
#     passed to it instead, so the machine is the same).
# Every start's bytes are checked (mpia_bench's default). Writes $NOISE_OUT/<kind>/<collective>_
# P<P>_<size>.csv (mpia_bench's CSV) and .log; scripts/smpi/noise_report.py judges them.
#
#   bash scripts/smpi/noise.sh                       every kind, P = 64, both collectives
#   NOISE_KINDS="platform fat_nodes_net" NOISE_NP=256 NOISE_SIZES="64 4096" bash scripts/smpi/noise.sh
#   /usr/bin/python3 scripts/smpi/noise_report.py build/smpi/noise
#
# Environment: NOISE_KINDS (default: platform and every variants/*.env), NOISE_NP (default 64),
# NOISE_COLLECTIVES (default "alltoall alltoallv"), NOISE_SIZES (default "8 64 512 4096"),
# NOISE_PATTERN (alltoallv's counts, default skewed), NOISE_ARRIVAL (default 0.3), NOISE_JITTER
# (default 0.5), NOISE_SEED (default 1), NOISE_ITERS (timed starts per variant, default 40),
# NOISE_JOBS (simulations at once, default 2), NOISE_TIMEOUT (seconds each, default 3600),
# NOISE_WARMUP_OTHERS (warm-up starts of the MPI library's calls, default 241 as the trial's:
# a simulation repeats the same start, so 10 saves most of a P = 128 alltoallv point's time),
# NOISE_OUT (default build/smpi/noise). A point whose CSV exists is not simulated again.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$root/build/smpi"
out="${NOISE_OUT:-$build/noise}"
kinds="${NOISE_KINDS:-platform $(cd "$here/variants" && ls -- *.env | sed 's/\.env$//' | tr '\n' ' ')}"
P="${NOISE_NP:-64}"
(cd "$root" && cmake --preset smpi >/dev/null) || exit 1
cmake --build "$build" -j "${MPIA_JOBS:-2}" --target mpia_bench >/dev/null || exit 1
mkdir -p "$out" && out="$(cd "$out" && pwd)"  # the points run in their own directories

# The candidates of each collective (mpia_bench variant names), as trial.sh's defaults.
# NOISE_ALLTOALL_VARIANTS, NOISE_ALLTOALLV_VARIANTS: other lists (mpia_bench --variants); a
# shorter one makes a point cheaper and its "best" the best of fewer (say so with its results).
alltoall_variants="${NOISE_ALLTOALL_VARIANTS:-linear,pairwise,bruck,modified_bruck,tra:radix=*,tra2:*,system,auto}"
alltoall_opts=(--radices 2,3,4,8,16,32 --sweep radix_intra=2,4,8,16 --sweep radix_inter=2,4,8)
alltoallv_variants="${NOISE_ALLTOALLV_VARIANTS:-linear,pairwise,multipair_waitany,multipair_testany:window=*,bruck:radix=*,hybrid:radix=*,locality,locality_radix:radix=*,system,auto}"
alltoallv_opts=(--radices 2,4,8 --windows 4,16 --patterns "${NOISE_PATTERN:-skewed}")

# point KIND COLLECTIVE SIZE: one simulation (skipped when its CSV exists).
point() {
  local kind="$1" coll="$2" size="$3" env_file dir base
  env_file="$here/variants/$kind.env"
  [ "$kind" = platform ] && env_file="$here/platform.env"
  dir="$out/$kind"
  base="$dir/${coll}_P${P}_${size}"
  [ -s "$base.csv" ] && return 0
  mkdir -p "$dir/tmp_${coll}_$size"
  (
    # shellcheck source=scripts/smpi/platform.env
    . "$env_file"
    Q="$SMPI_PPN"
    smpi_platform_files $((P / SMPI_PPN)) "$dir" "$env_file"
    # The kind's latency factors go to mpia_bench's jitter callback instead of smpirun.
    lat="0:1"
    if [ "$SMPI_NETWORK" = simgrid ]; then
      lat="65472:11.6436;15424:3.48845;9376:2.59299;5776:2.18796;3484:1.88101;1426:1.61075;732:1.9503;257:1.95341;0:2.01467"
    fi
    mapfile -t cfg < <(smpi_cfg_common | grep -v '^--cfg=smpi/lat-factor')
    vname="${coll}_variants" oname="${coll}_opts[@]"
    cd "$dir" && env TMPDIR="$dir/tmp_${coll}_$size" MPIX_LOCALITY="ppn:$Q" MPIX_REPORT=1 \
      timeout --kill-after=30 "${NOISE_TIMEOUT:-3600}" \
      smpirun -platform "$xml" -hostfile "$hosts" -np "$P" "${cfg[@]}" \
      --cfg=surf/precision:1e-8 "--cfg=smpi/privatize-libs:$build/src/libmpi_advance.so.0" \
      "--cfg=smpi/tmpdir:$dir/tmp_${coll}_$size" \
      "$build/benchmarks/mpia_bench" --collective "$coll" --sizes "$size" \
      --variants "${!vname}" "${!oname}" --iters "${NOISE_ITERS:-40}" --warmup 241 \
      --warmup-until-settled ${NOISE_WARMUP_OTHERS:+--warmup-others "$NOISE_WARMUP_OTHERS"} \
      --settle 0 --watchdog 0 --seed "${NOISE_SEED:-1}" \
      --noise-rel "${NOISE_ARRIVAL:-0.3}" --jitter "${NOISE_JITTER:-0.5}" --lat-factor "$lat" \
      --csv "$base.csv.part"
  ) >"$base.log" 2>&1
  local rc=$?
  rm -rf "$dir/tmp_${coll}_$size"
  if [ $rc -ne 0 ] || grep -qE 'FATAL|WRONG RESULT' "$base.log"; then
    echo "noise.sh: $kind $coll P=$P $size B failed (rc $rc): $base.log" >&2
    grep -E 'FATAL|WRONG RESULT' "$base.log" | head -3 >&2
    rm -f "$base.csv.part"
    return 1
  fi
  mv "$base.csv.part" "$base.csv"
  echo "noise.sh: $kind $coll P=$P $size B: $(grep -o 'chose [^ ]*' "$base.log" | head -1)"
}

jobs=0 status=0
for kind in $kinds; do
  for coll in ${NOISE_COLLECTIVES:-alltoall alltoallv}; do
    for size in ${NOISE_SIZES:-8 64 512 4096}; do
      point "$kind" "$coll" "$size" &
      jobs=$((jobs + 1))
      if [ "$jobs" -ge "${NOISE_JOBS:-2}" ]; then
        wait -n || status=1
        jobs=$((jobs - 1))
      fi
    done
  done
done
while [ "$jobs" -gt 0 ]; do
  wait -n || status=1
  jobs=$((jobs - 1))
done
exit $status
