# shellcheck shell=bash
# The tools' test scripts (test_mpia_info.sh, test_mpia_tune.sh) share this:
#   check NAME EXPECTED-RC REGEX -- command...
# runs the command (at most 300 s), and counts a failure in $fails unless it exits with
# EXPECTED-RC and its output matches REGEX (extended); prints ok or FAIL with the output's tail.
fails=0
check() {
  local name="$1" want="$2" re="$3"
  shift 4
  local out rc
  out="$(timeout 300 "$@" 2>&1)"
  rc=$?
  if [ "$rc" != "$want" ] || ! grep -Eq -- "$re" <<<"$out"; then
    echo "FAIL $name: rc=$rc (want $want), output:"
    printf '%s\n' "$out" | tail -30
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}
