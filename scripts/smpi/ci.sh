#!/usr/bin/env bash
# scripts/smpi/ci.sh -- the simulated smoke test of scripts/test.sh (stage "smpi"): builds the
# library and mpia_bench with SMPI (cmake --preset smpi, into build/smpi) and runs one small
# simulation on the cluster platform of scripts/smpi/platform.env: P = 32 on 2 nodes of 16, blocks
# of 8 B and 1 KiB, a few algorithms. It fails when the build fails, when the simulation fails,
# when mpia_bench finds a wrong byte (every result is checked byte by byte), and when the
# library's persistent messages do not pay SMPI's per-message overhead: with SMPI's own
# MPI_Alltoall forced to basic_linear (MPI_Isend/MPI_Irecv to every peer at once), "linear" (the
# same exchange through MPI_Send_init/MPI_Start) must take the same simulated time, within 2 %.
# Then a persistent auto request's measured trial, one alltoallv simulation (power-law and sparse
# counts, every algorithm) and one neighbor simulation (stencil and random graph through
# MPIX_Topo), every byte checked, and one on a paper's machine (Theta, machines/theta.env),
# then the same again as the lab's largest points run (--timing-only, SMPI_MMAP=1): same times.
#   bash scripts/smpi/ci.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=scripts/smpi/platform.env
. "$here/platform.env"
build="$root/build/smpi"
out="$build/ci"
P=32
Q="$SMPI_PPN"
N=$((P / Q))

for t in smpicc smpicxx smpirun cmake; do
  command -v "$t" >/dev/null || { echo "ci.sh: $t not found (apt-get install libsimgrid-dev)" >&2; exit 1; }
done
t0=$SECONDS
(cd "$root" && cmake --preset smpi >/dev/null)
cmake --build "$build" -j "${MPIA_JOBS:-2}" --target mpia_bench mpia_bench_static
echo "ci.sh: build ${SECONDS}s"
mkdir -p "$out"
SMPI_CLUSTER_NODES="$N" bash "$here/gen_platforms.sh" "$out" >/dev/null
mapfile -t cfg < <(smpi_cfg_common)
t1=$SECONDS
# simulate NAME [smpirun option ...] -- mpia_bench argument ...: one simulation of P ranks, its
# output in $out/NAME.log and its CSV in $out/NAME.csv; ends the script when the run fails or
# mpia_bench finds a wrong byte (every start's bytes are checked). Every run: 2 timed iterations,
# a warm-up of at most 241 starts (the trial's bound: test/mpi/test_trial.cpp) that ends once an
# auto request's trial settled.
simulate() {
  local name="$1" opts=()
  shift
  while [ "$1" != "--" ]; do opts+=("$1"); shift; done
  shift
  rm -f "$out/$name.csv"
  (cd "$out" && MPIX_LOCALITY="ppn:$Q" timeout --kill-after=10 300 \
    smpirun -platform "$out/cluster_N$N.xml" -hostfile "$out/hosts_N$N.txt" -np "$P" "${cfg[@]}" \
      --cfg=surf/precision:1e-8 "--cfg=smpi/privatize-libs:$build/src/libmpi_advance.so.0" \
      "${opts[@]}" "$build/benchmarks/mpia_bench" "$@" --iters 2 --warmup 241 --warmup-until-settled \
      --settle 0 --watchdog 0 --csv "$out/$name.csv") >"$out/$name.log" 2>&1 ||
    { tail -n 30 "$out/$name.log"; echo "ci.sh: simulation $name failed" >&2; exit 1; }
  if grep -qE 'FATAL|WRONG RESULT' "$out/$name.log"; then
    grep -E 'FATAL|WRONG RESULT' "$out/$name.log" >&2
    exit 1
  fi
}
simulate ci --cfg=smpi/alltoall:basic_linear -- \
  --variants 'linear,pairwise,bruck,zero_copy_bruck,tra,tra2,auto,tra:radix=*' --radices 3,8 \
  --sizes 8,1024
grep -v '^\[' "$out/ci.log" | sed -n '/^    size/,/^$/p'
python3 - "$out/ci.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
want = {"MPI_Alltoall", "linear", "pairwise", "bruck", "zero_copy_bruck", "tra", "tra2", "auto",
        "tra:radix=3", "tra:radix=8"}
bad = 0
for size in ("8", "1024"):
    got = {r["variant"]: float(r["median_max_us"]) for r in rows if r["size"] == size}
    if set(got) != want:
        print(f"ci.sh: block {size}: variants {sorted(got)}, expected {sorted(want)}")
        bad = 1
        continue
    lin, ref = got["linear"], got["MPI_Alltoall"]
    ok = abs(lin - ref) <= 0.02 * ref
    print(f"ci.sh: block {size} B: linear {lin:.2f} us, SMPI basic_linear {ref:.2f} us: "
          f"{'same' if ok else 'DIFFERENT'} per-message cost")
    bad |= not ok
sys.exit(bad)
PY
# Like with like (issue 51): on a machine with a receive overhead (smpi/or, which SMPI charges to
# none of its own collectives' receives) the MPI library's call behind the `system` entry must
# pay it as our linear exchange does -- the same messages -- or a trial keeps `system` for free.
simulate ci_recv --cfg=smpi/or:0:0.5e-6:0 -- --variants linear,system --sizes 8
python3 - "$out/ci_recv.csv" <<'PY'
import csv, sys
got = {r["variant"]: float(r["median_max_us"]) for r in csv.DictReader(open(sys.argv[1], newline=""))}
lin, sys_ = got.get("linear", 0.0), got.get("system", 0.0)
ok = lin > 0 and abs(sys_ - lin) <= 0.02 * lin
print(f"ci.sh: receive overhead 0.5 us, 8 B: linear {lin:.2f} us, system {sys_:.2f} us: "
      f"{'same' if ok else 'DIFFERENT'} charge")
sys.exit(0 if ok else 1)
PY
# auto that measures (issue #18): a persistent auto request tries its shortlist during its first
# starts and settles, agreeing over point-to-point messages and SMPI's simulated clock; the
# warm-up runs until the trial settled (within the trial's bound), so the timed starts
# run the settled entry, and every result is checked again.
MPIX_REPORT=1 simulate ci_trial -- --variants auto --sizes 8,1024
settled=$(grep -c 'mpi-advance: auto alltoall P=32 .*: chose ' "$out/ci_trial.log" || true)
grep 'mpi-advance: auto alltoall' "$out/ci_trial.log" | sed 's/^/ci.sh: /'
[ "$settled" -ge 2 ] || { echo "ci.sh: expected a settled trial at both sizes, found $settled" >&2; exit 1; }
# Alltoallv (issue 19): power-law and sparse counts through every alltoallv algorithm, the radix
# ones at radices 2 and 3 (locality_radix:radix=3 is beyond the 2 nodes: the library rejects it
# through MPI_COMM_SELF's handler, which mpia_bench sets to MPI_ERRORS_RETURN), and auto, every
# byte checked.
simulate ci_alltoallv --cfg=smpi/alltoallv:ompi -- --collective alltoallv \
  --patterns power_law,sparse --sizes 64 --radices 2,3 \
  --variants 'linear,pairwise,multipair_waitany,bruck:radix=*,hybrid:radix=*,locality,locality_radix:radix=*,auto'
python3 - "$out/ci_alltoallv.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
want = {"MPI_Alltoallv", "linear", "pairwise", "multipair_waitany", "bruck:radix=2", "bruck:radix=3",
        "hybrid:radix=2", "hybrid:radix=3", "locality", "locality_radix:radix=2", "auto"}
bad = 0
for pattern in ("power_law", "sparse"):
    got = {r["variant"]: float(r["median_max_us"]) for r in rows if r["pattern"] == pattern}
    if set(got) != want:
        print(f"ci.sh: alltoallv {pattern}: variants {sorted(got)}, expected {sorted(want)}")
        bad = 1
        continue
    print(f"ci.sh: alltoallv {pattern} 64 B: " + ", ".join(f"{v} {got[v]:.2f} us" for v in sorted(want)))
sys.exit(bad)
PY
# Neighbor collectives (issue 20): a 3-D 7-point stencil on a Cartesian communicator and a random
# graph of about 16 neighbours per rank through MPIX_Topo (smpi_compat.h stands in for SMPI's
# missing process-topology calls), every byte checked; direct, locality, locality_partial and auto against the
# flat MPI_Neighbor_alltoallv exchange of the stand-in.
simulate ci_neighbor -- --collective neighbor --patterns stencil3d,random --sizes 8,32 \
  --degree 16 --variants direct,locality,locality_partial,auto
python3 - "$out/ci_neighbor.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
want = {"MPI_Neighbor_alltoallv", "direct", "locality", "locality_partial", "auto"}
bad = 0
for pattern in ("stencil3d", "random"):
    for size in ("8", "32"):
        got = {r["variant"]: float(r["median_max_us"]) for r in rows
               if r["pattern"] == pattern and r["size"] == size}
        if set(got) != want:
            print(f"ci.sh: neighbor {pattern} {size}: variants {sorted(got)}, expected {sorted(want)}")
            bad = 1
            continue
        print(f"ci.sh: neighbor {pattern} n={size}: " +
              ", ".join(f"{v} {got[v]:.2f} us" for v in sorted(want)))
sys.exit(bad)
PY
# The papers' machines (machines/*.env, issue 51): Theta's dragonfly at P = 128 (2 nodes of 64
# ranks), 32 B, through paper_point.sh; every byte checked.
OUT="$out" PAPER_TAG=ci_theta bash "$here/paper_point.sh" theta 128 32 'tra:radix=12,tra2' >/dev/null
python3 - "$out/ci_theta.csv" <<'PY'
import csv, sys
got = {r["variant"]: float(r["median_max_us"]) for r in csv.DictReader(open(sys.argv[1], newline=""))}
want = {"MPI_Alltoall", "tra:radix=12", "tra2"}
if set(got) != want:
    sys.exit(f"ci.sh: theta: variants {sorted(got)}, expected {sorted(want)}")
print("ci.sh: theta P=128 32 B: " + ", ".join(f"{v} {got[v]:.2f} us" for v in sorted(want)))
PY
# The same point as the lab's largest runs take it (paper_point.sh SMPI_MMAP=1 --timing-only):
# the library linked in, its globals privatized by SimGrid's mmap mode (which shares the
# threads' variables between ranks), no result checked and one receive buffer shared by every
# rank. Under mmap privatization every byte is checked once; the simulated times of both runs
# must be the first run's.
SMPI_MMAP=1 OUT="$out" PAPER_TAG=ci_theta_mmap bash "$here/paper_point.sh" theta 128 32 \
  'tra:radix=12,tra2' >/dev/null
SMPI_MMAP=1 OUT="$out" PAPER_TAG=ci_theta_timing bash "$here/paper_point.sh" theta 128 32 \
  'tra:radix=12,tra2' --timing-only >/dev/null
python3 - "$out/ci_theta.csv" "$out/ci_theta_mmap.csv" "$out/ci_theta_timing.csv" <<'PY'
import csv, sys
a, *others = ({r["variant"]: r["median_max_us"] for r in csv.DictReader(open(f, newline=""))} for f in sys.argv[1:])
for name, b in zip(("mmap privatization", "--timing-only under it"), others):
    if a != b:
        sys.exit(f"ci.sh: theta, {name}: {b}, default: {a}")
print("ci.sh: theta P=128 32 B under mmap privatization, checked and --timing-only: the same times")
PY
echo "ci.sh: simulation $((SECONDS - t1))s, total $((SECONDS - t0))s: OK"
