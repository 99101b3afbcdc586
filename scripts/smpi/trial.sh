#!/usr/bin/env bash
# scripts/smpi/trial.sh -- auto that measures, simulated (issue #18): on a simulated machine,
# per (P, block size), the time of every alltoall candidate we can name (linear, pairwise, the
# Bruck family (not zero_copy_bruck: it sends bruck's messages, and SMPI charges no copies, so
# its times are bruck's), tra at a ladder of radices, tra2 at a grid of radix pairs), of the persistent
# auto request after its trial (mpia_bench --warmup 241 --warmup-until-settled: timing starts at
# the start after the trial settled, within the trial's bound of 241 starts), and of auto without measuring (MPIX_AUTO=model); every result checked byte by
# byte by mpia_bench. Writes $TRIAL_OUT/trial.csv (platform, P, ppn, bytes, selection, time_us:
# what scripts/calibrate.py reads; auto rows are ignored by its fit) and
# prints, per point, the best candidate, auto measured and auto model, each / best.
#
#   TRIAL_ENV=scripts/smpi/variants/simgrid_net.env TRIAL_NP="64" TRIAL_SIZES="8 512" \
#     bash scripts/smpi/trial.sh
#
# Environment: TRIAL_ENV (the machine: platform.env, default, or a variants/ file), TRIAL_NP
# (default "64"), TRIAL_SIZES (default "8 64 512 4096"), TRIAL_INTRA (tra2's radix_intra values,
# default "2 4 8 16 32", those <= the ranks per node), TRIAL_RADICES (tra's, default "2,3,4,8,16,32"), TRIAL_OUT (default
# build/smpi/trial/<env name>), TRIAL_TUNING (a tuning file for both autos, e.g. a calibration's),
# TRIAL_AUTO_ONLY=1 (only the two autos: with TRIAL_TUNING, a calibration judged on points whose
# candidates an earlier run measured), TRIAL_CANDIDATES_ONLY=1 (only the candidates), TRIAL_AUTOS (default "measured model": which autos), TRIAL_TIMEOUT (seconds per simulation, default 1800), TRIAL_ITERS (timed starts per variant, default 2: the simulation is deterministic, 1 for a P = 1024 baseline), TRIAL_FLAT (the single-level candidates,
# default 'linear,pairwise,bruck,modified_bruck,tra:radix=*'), TRIAL_COLLECTIVE=alltoallv (every alltoallv algorithm instead, TRIAL_CANDIDATES,
# default the direct ones, locality, and bruck, hybrid and locality_radix at TRIAL_RADICES, on
# the count patterns of TRIAL_PATTERNS, default "uniform skewed sparse"; sizes are mean blocks;
# SMPI's own MPI_Alltoallv as rows smpi:<selection> for each of TRIAL_BASELINES, default
# "ompi mpich", the first in the candidates' simulation),
# TRIAL_COLLECTIVE=neighbor (direct, locality and locality_partial, TRIAL_CANDIDATES, on mpia_bench's neighbor patterns,
# TRIAL_PATTERNS default "random": a random graph of TRIAL_DEGREE, default 16, neighbours per rank
# through MPIX_Topo; sizes as mpia_bench --collective neighbor reads them, default "8 512";
# TRIAL_PLACEMENT=scattered: the stencils' grid positions dealt round robin over the nodes).
# TRIAL_JOBS (default 1): simulations at once. Above 1 a point's candidates run one simulation per
# entry of their comma list (SMPI's baseline, where kept, in the first), the autos and baselines
# beside them: a P = 1024 alltoallv point, an hour and more of one core, in the time of its
# slowest family on a many-core machine. The rows agree with one simulation's to 0.2 % (a variant's
# time depends a little on what ran before it in its simulation: P = 64 power-law and sparse, 64 B).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
env_file="${TRIAL_ENV:-$here/platform.env}"
case "$env_file" in /*) ;; *) env_file="$root/$env_file" ;; esac
# shellcheck source=scripts/smpi/platform.env
. "$env_file"
name="$(basename "$env_file" .env)"
build="$root/build/smpi"
out="${TRIAL_OUT:-$build/trial/$name}"
Q="$SMPI_PPN"
intra="${TRIAL_INTRA:-2 4 8 16 32}"
radices="${TRIAL_RADICES:-2,3,4,8,16,32}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
(cd "$root" && cmake --preset smpi >/dev/null)
cmake --build "$build" -j "${MPIA_JOBS:-2}" --target mpia_bench >/dev/null
mapfile -t cfg < <(smpi_cfg_common)
tuning=()
[ -n "${TRIAL_TUNING:-}" ] && tuning=(MPIX_TUNING="$TRIAL_TUNING")
csv="$out/trial.csv"
echo "platform,P,ppn,bytes,selection,time_us" >"$csv"

# platform_files N: writes the machine's platform for N nodes (once) and sets xml and hosts.
platform_files() { smpi_platform_files "$1" "$out" "$env_file"; }

# sim TAG P SIZE WARMUP VARIANTS [ENV=VALUE...]: one simulation; appends its rows as TAG or, for
# the variant MPIX_Alltoall, as the selection MPIX_ALLTOALL names; the MPI library's own call
# (mpia_bench's baseline, SMPI's selection coll_cfg) as $baseline where that is set.
sim() {
  local tag="$1" P="$2" size="$3" warmup="$4" variants="$5" N=$((P / Q)) log nobase=() dst="${rows:-$csv}"
  shift 5
  # The library's own call runs only where its row is kept (at P = 1024 SMPI's alltoall(v)
  # posts P^2 messages per call: most of a simulation's time when it ran in every one).
  [ -n "${baseline:-}" ] || [ "$variants" = "MPI_$call" ] || nobase=(--no-baseline)
  log="$out/P${P}_s${size}_${pattern:-}_${tag//[^A-Za-z0-9_.=-]/_}${part:+_part$part}"
  platform_files "$N"
  # Its own temporary directory: smpirun copies the privatized libraries there under names
  # that two simulations at once would share.
  mkdir -p "$out/tmp${part:-}"
  (cd "$out" && env TMPDIR="$out/tmp${part:-}" MPIX_LOCALITY="ppn:$Q" MPIX_REPORT=1 "${tuning[@]}" "$@" timeout "${TRIAL_TIMEOUT:-1800}" \
    smpirun -platform "$xml" -hostfile "$hosts" -np "$P" "${cfg[@]}" \
      --cfg=surf/precision:1e-8 "--cfg=smpi/privatize-libs:$build/src/libmpi_advance.so.0" "${coll_cfg[@]}" \
      "$build/benchmarks/mpia_bench" "${coll[@]}" --variants "$variants" --radices "$radices" "${sweep[@]}" --sizes "$size" \
      "${nobase[@]}" --iters "${TRIAL_ITERS:-2}" --warmup "$warmup" --warmup-until-settled --settle 0 --rounds 1 --watchdog 0 --csv "$log.csv") \
    >"$log.log" 2>&1 || {
    tail -n 20 "$log.log"
    echo "trial.sh: simulation $log failed" >&2
    # A baseline alone (SMPI's own collective) may fail without failing the trial.
    [ "$variants" = "MPI_$call" ] && return 0
    exit 1
  }
  if grep -qE 'FATAL|WRONG RESULT' "$log.log"; then grep -E 'FATAL|WRONG' "$log.log" >&2; exit 1; fi
  /usr/bin/python3 - "$log.csv" "$dst" "$name${plabel:+/$plabel}" "$P" "$tag" "$Q" "${baseline:-}" "MPI_$call" <<'PY'
import csv, sys
src, dst, plat, P, tag, Q, base, call = sys.argv[1:9]
with open(dst, "a", newline="") as out:
    w = csv.writer(out)
    for r in csv.DictReader(open(src, newline="")):
        v = r["variant"]
        if v == call and base:
            w.writerow([plat, P, Q, r["size"], base, r["median_max_us"]])
        if v.startswith("MPI_") or v.startswith("blk:"):
            continue
        sel = tag if v in ("MPIX_Alltoall", "auto") and tag != "flat" else v
        w.writerow([plat, P, Q, r["size"], sel, r["median_max_us"]])
PY
  grep -h "mpi-advance: auto" "$log.log" | sed "s/^/  [$tag P=$P ${size} B] /" || true
}

jobs_max="${TRIAL_JOBS:-1}"
pids=()
parts=()
# spawn sim ARGS...: the simulation, at once where TRIAL_JOBS is 1; else in the background (its
# rows to a file of its own, after waiting while TRIAL_JOBS run), collected by settle.
spawn() {
  if [ "$jobs_max" -le 1 ]; then "$@"; return; fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  local n="${#parts[@]}"
  platform_files "$(($3 / Q))"  # here, not in two simulations at once
  : >"$out/part$n.rows"
  rows="$out/part$n.rows" part="$n" "$@" &
  pids+=("$!")
  parts+=("$out/part$n.rows")
}
# settle: waits for the background simulations (a status reaped by `wait -n` stays known to
# `wait PID`), appends their rows in the order they were spawned; fails if one failed.
settle() {
  local i failed=0
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed=1
    cat "${parts[$i]}" >>"$csv"
    rm -f "${parts[$i]}"
  done
  pids=() parts=()
  [ "$failed" = 0 ] || { echo "trial.sh: a simulation failed" >&2; exit 1; }
}
# candidates TAG P SIZE WARMUP LIST: the candidates' simulation; with TRIAL_JOBS above 1, one per
# entry of LIST (mpia_bench splits --variants at its commas too), the baseline in the first.
candidates() {
  local v first=1
  if [ "$jobs_max" -le 1 ]; then sim "$@"; return; fi
  local -a list
  IFS=, read -ra list <<<"$5"
  for v in "${list[@]}"; do
    if [ "$first" = 1 ]; then spawn sim "$1" "$2" "$3" "$4" "$v"; else baseline="" spawn sim "$1" "$2" "$3" "$4" "$v"; fi
    first=0
  done
}

coll=()
coll_cfg=()
call=Alltoall
baseline=""
sweep=()
pattern=""
plabel=""
# auto_sims P SIZE: the two autos, unless TRIAL_CANDIDATES_ONLY (the candidates' times do not
# depend on the selection code: a change to auto reruns only these, TRIAL_AUTO_ONLY=1).
auto_sims() {
  [ -z "${TRIAL_CANDIDATES_ONLY:-}" ] || return 0
  case " ${TRIAL_AUTOS:-measured model} " in *" measured "*) spawn sim auto_measured "$1" "$2" 241 auto ;; esac
  case " ${TRIAL_AUTOS:-measured model} " in *" model "*) spawn sim auto_model "$1" "$2" 0 auto MPIX_AUTO=model ;; esac
}
if [ "${TRIAL_COLLECTIVE:-alltoall}" = neighbor ]; then
  for P in ${TRIAL_NP:-64}; do
    for pattern in ${TRIAL_PATTERNS:-random}; do
      coll=(--collective neighbor --patterns "$pattern" --degree "${TRIAL_DEGREE:-16}"
        --placement "${TRIAL_PLACEMENT:-block}")
      # the rows' platform: <kind>/neighbor-<pattern>[-d<degree>][-<placement>] (the degree
      # where TRIAL_DEGREE is set, of random graphs)
      plabel="neighbor-$pattern"
      [ "$pattern" = random ] && plabel="$plabel${TRIAL_DEGREE:+-d$TRIAL_DEGREE}"
      plabel="$plabel${TRIAL_PLACEMENT:+-$TRIAL_PLACEMENT}"
      for size in ${TRIAL_SIZES:-8 512}; do
        echo "trial.sh: $name neighbor $pattern P=$P size ${size}"
        [ -n "${TRIAL_AUTO_ONLY:-}" ] ||
          candidates flat "$P" "$size" 0 "${TRIAL_CANDIDATES:-direct,locality,locality_partial}"
        auto_sims "$P" "$size"
      done
    done
  done
  TRIAL_NP=""
fi
if [ "${TRIAL_COLLECTIVE:-alltoall}" = alltoallv ]; then
  call=Alltoallv
  for P in ${TRIAL_NP:-64}; do
    for pattern in ${TRIAL_PATTERNS:-uniform skewed sparse}; do
      coll=(--collective alltoallv --patterns "$pattern")
      plabel="$pattern"  # the rows' platform: <kind>/<pattern>
      for size in ${TRIAL_SIZES:-8 64 512 4096}; do
        echo "trial.sh: $name alltoallv $pattern P=$P mean ${size} B"
        # The baselines (rows smpi:<selection>, not candidates): SMPI's MPI_Alltoallv under each
        # selection of TRIAL_BASELINES (default "ompi mpich"; SMPI 3.32's default selection
        # crashes at P = 64, 512 B under simgrid_net), the first as the bench's baseline in the
        # candidates' simulation, each other in a simulation of its own (TRIAL_BASELINES="": none;
        # TRIAL_CANDIDATES=MPI_Alltoallv: the first alone). The autos' simulations run none.
        # SMPI's MPI_Alltoall in log rounds (bruck) for our inits' size check (the P^2 messages
        # of its default at P = 1024 were most of a candidates' simulation).
        init_cfg=--cfg=smpi/alltoall:bruck
        read -ra bases <<<"${TRIAL_BASELINES-ompi mpich}"
        coll_cfg=("$init_cfg" --cfg=smpi/alltoallv:"${bases[0]:-ompi}")
        if [ -z "${TRIAL_AUTO_ONLY:-}" ]; then
          baseline="${bases[0]:+smpi:${bases[0]}}"
          candidates flat "$P" "$size" 0 "${TRIAL_CANDIDATES:-linear,pairwise,multipair_waitany,bruck:radix=*,hybrid:radix=*,locality,locality_radix:radix=*}"
          for b in "${bases[@]:1}"; do
            coll_cfg=("$init_cfg" --cfg=smpi/alltoallv:"$b") baseline="smpi:$b"
            spawn sim "smpi_$b" "$P" "$size" 0 MPI_Alltoallv
          done
          coll_cfg=("$init_cfg" --cfg=smpi/alltoallv:"${bases[0]:-ompi}") baseline=""
        fi
        auto_sims "$P" "$size"
      done
    done
  done
  TRIAL_NP=""
fi
for P in ${TRIAL_NP-64}; do
  N=$((P / Q))
  for size in ${TRIAL_SIZES:-8 64 512 4096}; do
    echo "trial.sh: $name P=$P ($N x $Q) ${size} B"
    # Every candidate in one simulation (each simulation of P = 1024 ranks spends ~40 s starting):
    # the flat ones and tra2's grid of (radix_intra <= ranks per node, radix_inter <= nodes),
    # persistent, through mpia_bench's parameter sweep.
    ri="" re=""
    for r1 in $intra; do [ "$r1" -le "$Q" ] && ri="$ri${ri:+,}$r1"; done
    for r2 in 2 4 8 16 32 64; do [ "$r2" -le "$N" ] && re="$re${re:+,}$r2"; done
    sweep=(--sweep "radix_intra=$ri" --sweep "radix_inter=$re")
    [ -n "${TRIAL_AUTO_ONLY:-}" ] ||
      candidates flat "$P" "$size" 0 "${TRIAL_FLAT:-linear,pairwise,bruck,modified_bruck,tra:radix=*},tra2:*"
    sweep=()
    auto_sims "$P" "$size"
  done
done
settle

/usr/bin/python3 - "$csv" <<'PY'
import csv, sys
from collections import defaultdict
pts = defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1], newline="")):
    pts[(r["platform"], int(r["P"]), int(r["bytes"]))][r["selection"]] = float(r["time_us"])
print("| platform | P | bytes | best candidate | us | auto measured / best | auto model / best |")
print("|---|---|---|---|---|---|---|")
for (plat, P, b), t in sorted(pts.items()):
    cands = {k: v for k, v in t.items() if not k.startswith(("auto", "smpi:"))}
    if not cands:
        print(f"| {plat} | {P} | {b} | (autos only) | | {t.get('auto_measured', 0):.1f} us | {t.get('auto_model', 0):.1f} us |")
        continue
    best = min(cands, key=cands.get)
    am, ao = t.get("auto_measured"), t.get("auto_model")
    f = lambda x: "%.2f" % (x / cands[best]) if x else "n/a"
    print(f"| {plat} | {P} | {b} | {best} | {cands[best]:.1f} | {f(am)} | {f(ao)} |")
PY
