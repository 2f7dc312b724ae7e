#!/bin/bash
# The baseline's cost under both policies, for two kgit trees in one GPU call: this checkout
# and OLD (a copy of another commit's kgit/ and bench/, e.g. `git archive REV kgit bench | tar -x
# -C .old`), each `bench/verdict_check.py --aa 0` (a seed baseline, then a default one). The
# site-packages are compiled first, as an ordinary install has them (both trees alike).
#
#   OUT=$OUT bash bench/baseline_ab.sh [OLD] [KERNEL]
#
# Prints each tree's baseline lines and its ratio to the seed's; the JSON goes to $OUT/new, $OUT/old.
set -u
OLD=${1:-.old}
KERNEL=${2:-rmsnorm}
OUT=${OUT:-/tmp/baseline_ab}
nvidia-smi --query-gpu=name,memory.total --format=csv
SP=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for package in torch triton numpy scipy sympy networkx jinja2 filelock fsspec; do
  [ -d "$SP/$package" ] && python3 -m compileall -q -j 0 "$SP/$package" >/dev/null 2>&1
done
for tree in new old; do
  case $tree in new) root=$PWD;; old) root=$(cd "$OLD" && pwd);; esac
  mkdir -p "$OUT/$tree"
  start=$(date +%s)
  PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$root OUT=$OUT/$tree python3 "$root/bench/verdict_check.py" \
    --kernel "$KERNEL" --aa 0 --slow 0 --fast 0 --seed 0 >"$OUT/$tree/log.txt" 2>&1
  echo "== $tree: exit $?, $(( $(date +%s) - start )) s"
  grep -E "^baseline|^seed baseline" "$OUT/$tree/log.txt"
done
