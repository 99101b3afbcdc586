#!/usr/bin/env bash
# ctest tools.mpia_info (and the installed-package test): every mode of mpia_info runs, prints
# what it promises, and exits as documented (0; 2 on a usage error).
set -u
info="$1"
# shellcheck source=tools/check.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/check.sh"
check version 0 '^mpi-advance [0-9]+\.[0-9]+' -- "$info"
check config-json 0 '"mpi_library": "[^"]+"' -- "$info" --json
check help 0 'usage: mpia_info' -- "$info" --help
check algorithms 0 'tra2' -- "$info" --algorithms
check algorithms-one 0 'locality_radix' -- "$info" --algorithms --collective alltoallv
check algorithms-json 0 '"name": "bruck"' -- "$info" --algorithms --json
check algorithms-reference 0 'reference: .*seed 003' -- "$info" --algorithms --collective alltoall
check algorithms-cost 0 'cost: .*radix\(P, r, B, f\)' -- "$info" --algorithms --collective alltoall
check algorithms-notation 0 'direct\(m, s, w\): ' -- "$info" --algorithms
check algorithms-markdown 0 '^  - cost: direct\(M, S, M\)$' -- "$info" --algorithms --markdown
check algorithms-json-fields 0 '"reference": "[^"]+", "cost_formula": "[^"]+"' -- "$info" \
  --algorithms --json
# Every algorithm, in every form, says where it comes from and what the model prices it at.
every() { # every NAME PER-ALGORITHM-REGEX -- command...: as many matching lines as algorithms
  local name="$1" re="$2" out n want
  shift 3
  out="$("$@" 2>&1)"
  n="$(grep -Ec -- "$re" <<<"$out")"
  want="$("$info" --algorithms --json | grep -c '"name": ')"
  if [ "$n" -ne "$want" ] || [ "$want" -lt 10 ]; then
    echo "FAIL $name: $n lines match '$re', want one per algorithm ($want)"
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}
every every-reference '^ +reference: .{10,}' -- "$info" --algorithms
every every-cost '^ +cost: .{10,}' -- "$info" --algorithms
every every-markdown-reference '^  - reference: .{10,}' -- "$info" --algorithms --markdown
every every-markdown-cost '^  - cost: .{10,}' -- "$info" --algorithms --markdown
every every-json '"reference": "[^"]{10,}.*"cost_formula": "[^"]{10,}' -- "$info" --algorithms \
  --json
check rank 0 'auto: tra' -- "$info" --rank --collective alltoall --nranks 64 --ppn 16 --bytes 8
check rank-json 0 '"candidates": \[\{"selection"' -- "$info" --rank --collective alltoallv \
  --nranks 64 --ppn 16 --bytes 512 --json
check rank-neighbor 0 'auto: ' -- "$info" --rank --collective neighbor --nranks 64 --ppn 16 \
  --bytes 8 --stats remote_edges=6,remote_nodes=3
check bad-option 2 'unknown option' -- "$info" --frobnicate
check bad-rank 2 'needs --collective' -- "$info" --rank --nranks 4 --bytes 8
# An option of another mode is a usage error, not silently ignored.
check bad-no-mode 2 '--collective needs --algorithms or --rank' -- "$info" --collective alltoallv
check bad-no-mode-rank 2 '--nranks needs --rank' -- "$info" --nranks 4
check bad-algorithms-rank 2 '--bytes needs --rank' -- "$info" --algorithms --bytes 8
check bad-rank-markdown 2 '--markdown needs --algorithms' -- "$info" --rank --collective alltoall \
  --nranks 4 --bytes 8 --markdown
check bad-tuning 1 'cannot read' -- "$info" --rank --collective alltoall --nranks 4 --bytes 8 \
  --tuning /nonexistent/tuning
[ "$fails" -eq 0 ] && echo "mpia_info: PASS" && exit 0
echo "mpia_info: $fails failed"
exit 1
