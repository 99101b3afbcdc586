#!/usr/bin/env bash
# ctest tools.mpia_info (and the installed-package test): every mode of mpia_info runs, prints
# what it promises, and exits as documented (0; 2 on a usage error).
set -u
info="$1"
fails=0
check() { # check NAME EXPECTED-RC REGEX -- command...
  local name="$1" want="$2" re="$3"
  shift 4
  local out rc
  out="$("$@" 2>&1)"
  rc=$?
  if [ "$rc" != "$want" ] || ! grep -Eq -- "$re" <<<"$out"; then
    echo "FAIL $name: rc=$rc (want $want), output:"
    printf '%s\n' "$out" | head -20
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}
check version 0 '^mpi-advance [0-9]+\.[0-9]+' -- "$info"
check config-json 0 '"mpi_library": "[^"]+"' -- "$info" --json
check help 0 'usage: mpia_info' -- "$info" --help
check algorithms 0 'tra2' -- "$info" --algorithms
check algorithms-one 0 'locality_radix' -- "$info" --algorithms --collective alltoallv
check algorithms-json 0 '"name": "bruck"' -- "$info" --algorithms --json
check rank 0 'auto: tra' -- "$info" --rank --collective alltoall --nranks 64 --ppn 16 --bytes 8
check rank-json 0 '"candidates": \[\{"selection"' -- "$info" --rank --collective alltoallv \
  --nranks 64 --ppn 16 --bytes 512 --json
check rank-neighbor 0 'auto: ' -- "$info" --rank --collective neighbor --nranks 64 --ppn 16 \
  --bytes 8 --stats remote_edges=6,remote_nodes=3
check bad-option 2 'unknown option' -- "$info" --frobnicate
check bad-rank 2 'needs --collective' -- "$info" --rank --nranks 4 --bytes 8
check bad-tuning 1 'cannot read' -- "$info" --rank --collective alltoall --nranks 4 --bytes 8 \
  --tuning /nonexistent/tuning
[ "$fails" -eq 0 ] && echo "mpia_info: PASS" && exit 0
echo "mpia_info: $fails failed"
exit 1
