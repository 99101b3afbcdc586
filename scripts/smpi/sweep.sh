#!/usr/bin/env bash
# scripts/smpi/sweep.sh -- the simulated all-to-all sweep: P x block size x algorithm x parameters
# on a SimGrid SMPI cluster (scripts/smpi/platforms/), plus SMPI's own MPI_Alltoall under its
# Open MPI and MPICH selectors as the baselines, into ONE CSV; then the plots (plot.py).
#
#   bash scripts/smpi/sweep.sh                      # modest grid: P = 64, 256; 8 and 512 B
#   SWEEP_GRID=full bash scripts/smpi/sweep.sh      # P = 64, 256, 1024; 8, 64, 512, 4096 B
#
# Every smpirun is one simulation on one core: they run one at a time. Rows already in the CSV
# (same platform, P, block size and run) are not run again, so an interrupted sweep resumes
# where it stopped and a larger grid adds to a smaller one. README.md says what each P costs.
#
# Environment (all optional):
#   SWEEP_GRID        modest (default) or full: the defaults of the lists below
#   SWEEP_NP          process counts (modest "64 256", full "64 256 1024"); multiples of the
#                     ranks per node (platform.env: SMPI_PPN = 16)
#   SWEEP_SIZES       block sizes in bytes (modest "8 512", full "8 64 512 4096")
#   SWEEP_PLATFORM    cluster (default: platforms/cluster_N<P/16>.xml) or fattree
#                     (platforms/fattree_N512.xml, its first P/16 nodes)
#   SWEEP_ALGOS       single-parameter-set algorithms (default "linear pairwise bruck
#                     modified_bruck auto"; zero_copy_bruck sends bruck's messages and
#                     SMPI charges no copies, so its times are bruck's: add it to see)
#   SWEEP_TRA_RADICES tra radices, comma list (default: 2..P up to P = 64; above, a dense set
#                     2,3,4,5,6,8,10,12,16,20,24,32,45,64,90,128,181,256,... up to P)
#   SWEEP_TRA2_INTRA  tra2 radix_intra values (default "2 3 4 8 16", capped at the ranks per node)
#   SWEEP_TRA2_INTER  tra2 radix_inter values (default "2 3 4 6 8 12 16 24 32 64 128 256",
#                     capped at the node count; the node count itself always included)
#   SWEEP_BASELINES   SMPI selectors to run MPI_Alltoall under (default "ompi mpich")
#   SWEEP_SKIP_TRA2=1 / SWEEP_SKIP_TRA=1 / SWEEP_SKIP_BASELINES=1   leave those parts out
#   SWEEP_ITERS       timed iterations (default 2: the simulation is deterministic)
#   SWEEP_TIMEOUT     wall seconds one smpirun may take (default 1800); past it the run is
#                     killed, logged as FAILED in the CSV's log and the sweep goes on
#   SWEEP_CSV         the CSV (default docs/results/smpi/sweep.csv)
#   SWEEP_BUILD       the SMPI build tree (default build/smpi: cmake --preset smpi)
#   SWEEP_NO_BUILD=1  do not (re)build; SWEEP_NO_PLOT=1  do not draw
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=scripts/smpi/platform.env
. "$here/platform.env"
# shellcheck source=scripts/common.sh
. "$root/scripts/common.sh"   # mpia_python: the interpreter that has matplotlib
Q="$SMPI_PPN"

grid="${SWEEP_GRID:-modest}"
case "$grid" in
  modest) def_np="64 256"; def_sizes="8 512" ;;
  full) def_np="64 256 1024"; def_sizes="8 64 512 4096" ;;
  *) echo "sweep.sh: SWEEP_GRID must be modest or full" >&2; exit 2 ;;
esac
NPS="${SWEEP_NP:-$def_np}"
SIZES="${SWEEP_SIZES:-$def_sizes}"
PLATFORM="${SWEEP_PLATFORM:-cluster}"
ALGOS="${SWEEP_ALGOS:-linear pairwise bruck modified_bruck auto}"
TRA2_INTRA="${SWEEP_TRA2_INTRA:-2 3 4 8 16}"
TRA2_INTER="${SWEEP_TRA2_INTER:-2 3 4 6 8 12 16 24 32 64 128 256}"
BASELINES="${SWEEP_BASELINES:-ompi mpich}"
ITERS="${SWEEP_ITERS:-2}"
TIMEOUT="${SWEEP_TIMEOUT:-1800}"
CSV="${SWEEP_CSV:-$root/docs/results/smpi/sweep.csv}"
BUILD="${SWEEP_BUILD:-$root/build/smpi}"
LOGDIR="$BUILD/sweep-logs"

log() { printf '[sweep %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for t in smpirun cmake timeout python3; do
  command -v "$t" >/dev/null 2>&1 || die "'$t' not found (SimGrid: apt-get install libsimgrid-dev)"
done
for P in $NPS; do
  if [ $((P % Q)) -ne 0 ] || [ $((P / Q)) -lt 2 ]; then die "P=$P is not 2 or more nodes of $Q ranks"; fi
done

# ---------------------------------------------------------------------------------------------
# Build (the preset of CMakePresets.json) and platforms.
if [ "${SWEEP_NO_BUILD:-0}" != 1 ]; then
  log "build: cmake --preset smpi + mpia_bench in ${BUILD#"$root"/}"
  (cd "$root" && cmake --preset smpi -B "$BUILD" >/dev/null && cmake --build "$BUILD" -j "${MPIA_JOBS:-2}" --target mpia_bench >/dev/null) ||
    die "SMPI build failed (run: cmake --preset smpi && cmake --build build/smpi --target mpia_bench)"
fi
BENCH="$BUILD/benchmarks/mpia_bench"
LIB="$BUILD/src/libmpi_advance.so.0"  # the SONAME: what the program's DT_NEEDED names
if [ ! -x "$BENCH" ] || [ ! -e "$LIB" ]; then die "$BENCH or $LIB missing"; fi
mkdir -p "$LOGDIR" "$(dirname "$CSV")"
plat_dir="$(mktemp -d)"
trap 'rm -rf "$plat_dir"' EXIT
# Fresh from platform.env, so that the simulation always uses the values the cost model reads.
bash "$here/gen_platforms.sh" "$plat_dir" >/dev/null || die "gen_platforms.sh failed"

mapfile -t CFG < <(smpi_cfg_common)
CFG+=("--cfg=smpi/privatize-libs:$LIB")  # one copy of the library's globals per rank

# ---------------------------------------------------------------------------------------------
default_radices() {  # P: tra radices
  local P="$1" r out=""
  if [ "$P" -le 64 ]; then
    for ((r = 2; r <= P; r++)); do out+="${out:+,}$r"; done
  else
    for r in 2 3 4 5 6 8 10 12 16 20 24 32 45 64 90 128 181 256 362 512 724 1024 2048 4096; do
      [ "$r" -le "$P" ] && out+="${out:+,}$r"
    done
  fi
  echo "$out"
}

# The runs already in the CSV, read once: "platform|P|block|run".
declare -A RUNS_DONE=()
if [ -s "$CSV" ]; then
  while IFS= read -r k; do RUNS_DONE["$k"]=1; done < <(python3 - "$CSV" <<'PY'
import csv, sys
with open(sys.argv[1], newline="") as f:
    for r in csv.DictReader(f):
        print("|".join((r["platform"], r["P"], r["block_bytes"], r["run"])))
PY
)
fi
done_key() {  # KEY P SIZE: whether the CSV has rows of this run
  [ -n "${RUNS_DONE["$PLATFORM|$2|$3|$1"]:-}" ]
}

# run KEY P SIZE KIND EXTRA_CFG ENV VARIANTS [RADICES]
#  KIND: ours (its MPI_Alltoall row kept as smpi:bruck) | ours-only | baseline:<selector> | tra2
run() {
  local key="$1" P="$2" size="$3" kind="$4" extra_cfg="$5" envs="$6" variants="$7" radices="${8:-none}"
  local N=$((P / Q)) plat hosts prec name logf csv t0 wall rc
  if done_key "$key" "$P" "$size"; then return 0; fi
  case "$PLATFORM" in
    cluster) plat="$plat_dir/cluster_N$N.xml"; hosts="$plat_dir/hosts_N$N.txt" ;;
    fattree) plat="$plat_dir/fattree_N$SMPI_FT_NODES.xml"; hosts="$plat_dir/hosts_fattree_N$N.txt" ;;
    *) die "SWEEP_PLATFORM must be cluster or fattree" ;;
  esac
  if [ ! -f "$plat" ]; then
    SMPI_CLUSTER_NODES="$N" bash "$here/gen_platforms.sh" "$plat_dir" >/dev/null
  fi
  if [ ! -f "$plat" ] || [ ! -f "$hosts" ]; then die "no platform for $N nodes ($plat)"; fi
  # surf/precision: 1e-8 s up to 1 KiB blocks, 1e-7 s above (thousands of bandwidth-bound
  # flows share each NIC: every flow event re-solves them; see README.md).
  if [ "$size" -le 1024 ]; then prec=1e-8; else prec=1e-7; fi
  name="${PLATFORM}_P${P}_s${size}_${key//[^A-Za-z0-9_.=-]/_}"
  logf="$LOGDIR/$name.log"
  csv="$LOGDIR/$name.csv"
  rm -f "$csv"
  local -a ecfg=() eenv=()
  read -r -a ecfg <<<"$extra_cfg"
  read -r -a eenv <<<"$envs"
  log "P=$P ($N x $Q) ${size} B: $key"
  t0=$(date +%s.%N)
  # timeout puts the simulation in a process group of its own: remember it, so that stopping
  # the sweep (INT/TERM) stops the simulation too (the trap below).
  (cd "$LOGDIR" && exec env MPIX_LOCALITY="ppn:$Q" "${eenv[@]}" timeout --kill-after=30 "$TIMEOUT" \
     smpirun -platform "$plat" -hostfile "$hosts" -np "$P" "${CFG[@]}" "${ecfg[@]}" \
       "--cfg=surf/precision:$prec" \
       "$BENCH" --variants "$variants" --radices "$radices" --sizes "$size" \
       --iters "$ITERS" --warmup 0 --trial-warmup 0 --settle 0 --rounds 1 --watchdog 0 \
       --csv "$csv") >"$logf" 2>&1 &
  sim_pid=$!
  wait "$sim_pid"
  rc=$?
  sim_pid=""
  wall=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(date +%s.%N)")
  if [ "$rc" -ne 0 ] || grep -qE 'FATAL|WRONG RESULT|Execution failed' "$logf" || [ ! -s "$csv" ]; then
    log "  FAILED (exit $rc, ${wall} s; log ${logf#"$root"/})"
    tail -n 5 "$logf" >&2
    echo "$(date -Is) $PLATFORM P=$P size=$size $key: FAILED exit $rc after ${wall} s ($logf)" >>"${CSV%.csv}.failures.log"
    failures=$((failures + 1))
    return 0
  fi
  log "  done in ${wall} s wall"
  RUNS_DONE["$PLATFORM|$P|$size|$key"]=1
  python3 - "$csv" "$CSV" "$PLATFORM" "$P" "$Q" "$size" "$key" "$kind" "$wall" "$prec" <<'PY'
import csv, os, sys
src, dst, platform, P, Q, size, key, kind, wall, prec = sys.argv[1:]
cols = ["platform", "P", "ppn", "nodes", "block_bytes", "selection", "algorithm", "kind",
        "time_us", "avg_us", "max_us", "iters", "run", "run_wall_s", "precision"]
rows = []
with open(src, newline="") as f:
    for r in csv.DictReader(f):
        v, alg = r["variant"], r["algorithm"]
        if kind.startswith("baseline:"):
            if v != "MPI_Alltoall":
                continue
            sel = "smpi:" + kind.split(":", 1)[1]
            alg = "MPI_Alltoall (SMPI coll-selector " + kind.split(":", 1)[1] + ")"
            k = "baseline"
        elif kind == "tra2":
            if v != "MPIX_Alltoall":
                continue
            alg = alg.replace(" (as init)", "")
            sel, k = alg, "ours"
        else:
            if v == "MPI_Alltoall" and kind == "ours-only":
                continue
            if v == "MPI_Alltoall":  # SMPI's own alltoall forced to bruck (smpi/alltoall:bruck)
                sel, alg, k = "smpi:bruck", "MPI_Alltoall (SMPI bruck)", "baseline"
            else:
                sel, k = v, "ours"
        rows.append({"platform": platform, "P": P, "ppn": Q, "nodes": int(P) // int(Q),
                     "block_bytes": size, "selection": sel, "algorithm": alg, "kind": k,
                     "time_us": r["median_max_us"], "avg_us": r["avg_us"], "max_us": r["max_us"],
                     "iters": r["iters"], "run": key, "run_wall_s": wall, "precision": prec})
new = not os.path.exists(dst) or os.path.getsize(dst) == 0
with open(dst, "a", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
    if new:
        w.writeheader()
    w.writerows(rows)
PY
}

failures=0
t_all=$SECONDS
sim_pid=""
trap '[ -n "$sim_pid" ] && kill -- "-$sim_pid" 2>/dev/null; rm -rf "$plat_dir"; exit 130' INT TERM
log "grid=$grid platform=$PLATFORM P=[$NPS] sizes=[$SIZES] -> ${CSV#"$root"/}"
for P in $NPS; do
  N=$((P / Q))
  radices="${SWEEP_TRA_RADICES:-$(default_radices "$P")}"
  for size in $SIZES; do
    # 1. SMPI's baselines: its MPI_Alltoall under the Open MPI and MPICH selectors (the
    #    barrier/allreduce/allgather/bcast stay the log-round ones of platform.env).
    if [ "${SWEEP_SKIP_BASELINES:-0}" != 1 ]; then
      for b in $BASELINES; do
        run "baseline:$b" "$P" "$size" "baseline:$b" "--cfg=smpi/coll-selector:$b" "" MPI_Alltoall
      done
    fi
    # 2. Ours: the single-parameter-set algorithms (linear, which posts everything at once and
    #    costs the most to simulate, in a run of its own), then tra in runs of a few radices, so
    #    that one run past SWEEP_TIMEOUT loses little. The benchmark always runs MPI_Alltoall
    #    too (--settle 0: no untimed ones): SMPI's bruck, a log-round algorithm, keeps that
    #    cheap, and is recorded as the baseline "smpi:bruck" from the first run.
    #    auto has a run of its own too, so that its rows can be deleted and measured again
    #    alone when the model changes (SWEEP_ALGOS=auto SWEEP_SKIP_TRA=1 SWEEP_SKIP_TRA2=1
    #    SWEEP_SKIP_BASELINES=1). No warm-up, none either until auto's measured trial
    #    settled (--warmup 0 --trial-warmup 0): what the sweep has always timed; auto settled
    #    is scripts/smpi/trial.sh's.
    others=""
    for a in $ALGOS; do [ "$a" = linear ] || [ "$a" = auto ] || others+="${others:+,}$a"; done
    [ -n "$others" ] && run "ours" "$P" "$size" ours "--cfg=smpi/alltoall:bruck" "" "$others"
    for a in auto linear; do
      [[ " $ALGOS " == *" $a "* ]] &&
        run "$a" "$P" "$size" ours-only "--cfg=smpi/alltoall:bruck" "" "$a"
    done
    if [ "${SWEEP_SKIP_TRA:-0}" != 1 ]; then
      IFS=',' read -r -a rl <<<"$radices"
      for ((i = 0; i < ${#rl[@]}; i += 6)); do
        chunk="$(IFS=','; echo "${rl[*]:i:6}")"
        run "tra:radix=$chunk" "$P" "$size" ours-only "--cfg=smpi/alltoall:bruck" "" "tra:radix=*" "$chunk"
      done
    fi
    # 3. tra2 at each (radix_intra, radix_inter): the blocking MPIX_Alltoall with the selection
    #    in MPIX_ALLTOALL (mpia_bench takes no parameterised tra2 variant), one run per pair.
    if [ "${SWEEP_SKIP_TRA2:-0}" != 1 ]; then
      inters=""
      for b in $TRA2_INTER $N; do
        [ "$b" -le "$N" ] && [[ " $inters " != *" $b "* ]] && inters+=" $b"
      done
      for a in $TRA2_INTRA; do
        [ "$a" -le "$Q" ] || continue
        for b in $inters; do
          sel="tra2:radix_intra=$a,radix_inter=$b"
          run "$sel" "$P" "$size" tra2 "--cfg=smpi/alltoall:bruck" "MPIX_ALLTOALL=$sel" MPIX_Alltoall
        done
      done
    fi
  done
done
log "sweep: $((SECONDS - t_all)) s, $failures failed run(s); CSV ${CSV#"$root"/}"

if [ "${SWEEP_NO_PLOT:-0}" != 1 ]; then
  if py="$(mpia_python matplotlib)"; then
    "$py" "$here/plot.py" "$CSV" "$(dirname "$CSV")" || log "plot.py failed"
  else
    log "no plots"
  fi
fi
[ "$failures" -eq 0 ]
