#!/usr/bin/env bash
# Where a tuning run's seconds go with two versions of the package, on one machine: each case is
# tuned by package A, then by package B, each run with empty build caches (imagecl's and PoCL's),
# no transfer seeds and no confirmation, its phase report (--verbose) appended to a log.
#
#     bash benchmarks/tuning_ab.sh A_DIR B_DIR LOG [DEVICE] [CASE ...]
#
# A_DIR, B_DIR: folders holding a package's imagecl/, grammar/, templates/ and tuner/ (for
# instance `git archive REV imagecl grammar templates tuner | tar -x -C A_DIR`); LOG: the log
# to append to; DEVICE: --device (default cpu); a CASE is "PROGRAM.icl SIZE BUDGET" (default:
# bilateral 128^3 with 6 configurations, convolution9 2048^2 with 8).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
a="$(cd "$1" && pwd)"; b="$(cd "$2" && pwd)"; log="$(realpath "$3")"; device="${4:-cpu}"
shift $(( $# < 4 ? $# : 4 ))
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=("bilateral.icl 128x128x128 6" "convolution9.icl 2048x2048 8")
for case in "${cases[@]}"; do
  read -r program size budget <<< "$case"
  for package in "$a" "$b"; do
    scratch="$(mktemp -d)"
    echo "== $package $program $size budget $budget" | tee -a "$log"
    ( cd "$package" && XDG_CACHE_HOME="$scratch/xdg" IMAGECL_CACHE="$scratch/cache" POCL_CACHE_DIR="$scratch/pocl" \
        PYTHONPATH="$package" /usr/bin/time -f "wall %e s" python3 -m imagecl tune "$root/examples/$program" \
        --size "$size" --device "$device" --budget "$budget" --confirm 0 --no-transfer -o "$scratch/out" --verbose \
        2>&1 | grep -v "^tuning:" | grep -v "^  slow" ) | tee -a "$log"
    rm -rf "$scratch"
  done
done
