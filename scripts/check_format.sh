#!/usr/bin/env bash
# scripts/check_format.sh -- every C, C++ and header file git tracks follows .clang-format
# (stage "format" of scripts/test.sh). Prints each file that does not, with the command that
# fixes it, and exits non-zero then.
#   bash scripts/check_format.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v clang-format >/dev/null || {
  echo "check_format.sh: clang-format not found (apt-get install clang-format)" >&2
  exit 1
}
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cc' '*.cpp' '*.hpp')
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
echo "check_format.sh: $(clang-format --version | head -1): ${#files[@]} files, ${#bad[@]} not formatted"
if [ "${#bad[@]}" -gt 0 ]; then
  printf '  %s\n' "${bad[@]}"
  echo "fix: clang-format -i ${bad[*]}"
  exit 1
fi
