#!/usr/bin/env bash
# scripts/calibrate_cluster.sh -- the lab's calibration (the installed bin/mpia_tune is the users' one,
# docs/guide.md; both fit alike): calibrate auto's cost model on a machine in one command:
# measures a small set of all-to-all algorithms x block sizes with mpia_bench (minutes), fits
# the model's constants to the measured times (scripts/calibrate.py fit), writes a tuning file
# for MPIX_TUNING, and prints the fitted prediction against the measurement at every point and
# what auto now picks against the best measured selection.
#
# Run it inside an allocation, with your launcher:
#   MPIA_LAUNCH="srun -n 64" bash scripts/calibrate_cluster.sh
#   MPIA_LAUNCH="mpiexec -n 128 --map-by ppr:16:node" MPIA_BUILD=build/openmpi bash scripts/calibrate_cluster.sh
#   export MPIX_TUNING=$PWD/results/calibration/tuning.txt     # then every run uses it
# A simulated machine works the same way (scripts/smpi/README.md), e.g. P = 64 of
# scripts/smpi/variants/recv_switch.env:
#   . scripts/smpi/variants/recv_switch.env; p=scripts/smpi/platforms/recv_switch
#   MPIX_LOCALITY=ppn:16 MPIA_LAUNCH="smpirun -platform $p/cluster_N4.xml -hostfile $p/hosts_N4.txt
#     -np 64 $(smpi_cfg_common | tr '\n' ' ') --cfg=surf/precision:1e-8 --cfg=smpi/alltoall:bruck
#     --cfg=smpi/privatize-libs:build/smpi/src/libmpi_advance.so.0" MPIA_BUILD=build/smpi
#     MPIA_MODEL=build/openmpi/benchmarks/mpia_model MPIA_CAL_ARGS="--iters 2 --warmup 0 --watchdog 0"
#     MPIA_CAL_SIZES=8,512 MPIA_CAL_TRA2="2,2 2,4" bash scripts/calibrate_cluster.sh
# Calibrate at the P you run at (or a few: one run of the script each, the CSVs fitted together,
# see MPIA_CAL_FIT_ALSO), with ranks placed as your jobs place them: the library learns the
# node map itself (MPI_Comm_split_type), or from MPIX_LOCALITY=ppn:Q.
#
# Environment:
#   MPIA_LAUNCH        the launcher and its arguments, word-split (required), e.g. "srun -n 64"
#   MPIA_BUILD         the build tree with benchmarks/mpia_bench and benchmarks/mpia_model,
#                      built against the MPI you run (default build/openmpi; configure with
#                      -DMPIA_BUILD_BENCHMARKS=ON)
#   MPIA_MODEL         mpia_model, when not in MPIA_BUILD (it runs here, without MPI: e.g. the
#                      native build's when mpia_bench is a SimGrid SMPI build)
#   MPIA_CAL_OUT       output directory (default results/calibration): measured.csv (mpia_bench's
#                      CSV), measured_tra2_<a>_<b>.csv, tuning.txt, calibrate.log
#   MPIA_CAL_SIZES     block sizes in bytes (default 8,512,4096)
#   MPIA_CAL_VARIANTS  mpia_bench variants of the main run (default
#                      "linear,pairwise,bruck,tra2,tra:radix=*": tra2 at its default radices)
#   MPIA_CAL_RADICES   radices of tra:radix=* (default 2,4,8; those above P are skipped)
#   MPIA_CAL_TRA2      more tra2 pairs "a,b a,b ..." (radix_intra,radix_inter), one launch each
#                      (the blocking MPIX_Alltoall under MPIX_ALLTOALL); default "2,2"
#   MPIA_CAL_ARGS      mpia_bench's timing options (default "--rounds 3 --warmup 5 --iters 100";
#                      mpia_bench's own default, OSU's 1000 up to 8 KiB blocks, takes ten times
#                      longer)
#   MPIA_CAL_FIT_ALSO  more CSVs to fit together with these (earlier runs at other P)
#   MPIA_CAL_RULES=0   no pinning rules (by default a rule pins the best measured selection at
#                      each point where the fitted model's pick is more than 10 % slower)
#   MPIA_CAL_FIX       constants to hold, calibrate.py fit --fix (e.g. "bw_copy=0")
#   MPIA_CAL_TIMEOUT   seconds one launch may take (default 900)
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/common.sh
. "$here/common.sh"
root="$MPIA_ROOT"

die() { mpia_log "calibrate_cluster: $*"; exit 1; }

[ -n "${MPIA_LAUNCH:-}" ] || die "set MPIA_LAUNCH to your launcher, e.g. MPIA_LAUNCH=\"srun -n 64\" or \"mpiexec -n 64\""
read -r -a launch <<<"$MPIA_LAUNCH"
build="${MPIA_BUILD:-$root/build/openmpi}"
bench="$build/benchmarks/mpia_bench"
model="${MPIA_MODEL:-$build/benchmarks/mpia_model}"
for t in "$bench" "$model"; do
  [ -x "$t" ] || die "$t not found: build with -DMPIA_BUILD_BENCHMARKS=ON (targets mpia_bench mpia_model) and set MPIA_BUILD"
done
py="$(mpia_python numpy)" || die "calibrate.py needs numpy"
out="${MPIA_CAL_OUT:-$root/results/calibration}"
mkdir -p "$out" || die "cannot create $out"
sizes="${MPIA_CAL_SIZES:-8,512,4096}"
variants="${MPIA_CAL_VARIANTS:-linear,pairwise,bruck,tra2,tra:radix=*}"
radices="${MPIA_CAL_RADICES:-2,4,8}"
read -r -a timing <<<"${MPIA_CAL_ARGS:---rounds 3 --warmup 5 --iters 100}"
timeout_s="${MPIA_CAL_TIMEOUT:-900}"
t_start=$SECONDS

# One launch of mpia_bench; its CSV and log in $out. Extra environment as NAME=VALUE words.
measure() {  # NAME VARIANTS [NAME=VALUE...]
  local name="$1" vars="$2" t0=$SECONDS
  shift 2
  rm -f "$out/$name.csv"
  mpia_log "measure $name: ${launch[*]} mpia_bench --variants '$vars' --sizes $sizes"
  mpia_run_bench "$out/$name" "$timeout_s" env "$@" "${launch[@]}" "$bench" --collective alltoall \
    --variants "$vars" --radices "$radices" --sizes "$sizes" "${timing[@]}" --settle 0 ||
    die "measuring $name"
  mpia_log "measure $name: $((SECONDS - t0)) s"
}

measure measured "$variants"
csvs=("$out/measured.csv")
for pair in ${MPIA_CAL_TRA2-2,2}; do
  a="${pair%,*}" b="${pair#*,}"
  case "$a$b" in *[!0-9]*|"") die "MPIA_CAL_TRA2: '$pair' is not radix_intra,radix_inter" ;; esac
  # tra2 needs several nodes: the main run's CSV says how many the library found.
  nodes="$("$py" -c 'import csv,sys; r=[x for x in csv.DictReader(open(sys.argv[1]))]; print(max(int(x["nodes"] or 1) for x in r))' "$out/measured.csv" 2>/dev/null || echo 1)"
  if [ "${nodes:-1}" -lt 2 ]; then
    mpia_log "one node: no tra2 pairs"
    break
  fi
  measure "measured_tra2_${a}_${b}" MPIX_Alltoall "MPIX_ALLTOALL=tra2:radix_intra=$a,radix_inter=$b"
  csvs+=("$out/measured_tra2_${a}_${b}.csv")
done
read -r -a also <<<"${MPIA_CAL_FIT_ALSO:-}"
csvs+=("${also[@]}")

fit=("$py" "$here/calibrate.py" fit --model-tool "$model" --points -o "$out/tuning.txt")
[ "${MPIA_CAL_RULES:-1}" != 0 ] && fit+=(--rules)
[ -n "${MPIA_CAL_FIX:-}" ] && fit+=(--fix "$MPIA_CAL_FIX")
mpia_log "fit: ${fit[*]} ${csvs[*]}"
"${fit[@]}" "${csvs[@]}" >"$out/calibrate.log" 2>&1 || { cat "$out/calibrate.log" >&2; die "calibrate.py fit failed"; }

echo
echo "== the fitted model against the measurement (every point; error = predicted / measured - 1)"
grep -v '^# mpi-advance' "$out/tuning.txt"
echo
echo "== auto with this tuning file against the best measured selection (and the MPI library's own MPI_Alltoall)"
"$py" "$here/calibrate.py" grid --model-tool "$model" --tuning "$out/tuning.txt" "${csvs[@]}" ||
  die "calibrate.py grid failed"
echo
echo "calibrate_cluster: $((SECONDS - t_start)) s; tuning file $out/tuning.txt"
echo "  use it with: export MPIX_TUNING=$out/tuning.txt"
