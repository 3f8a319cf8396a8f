#!/usr/bin/env bash
# Few-shot tuning live (issue 17): `imagecl tune --budget 10` started from the shipped knowledge
# (benchmarks/results/knowledge: 29 programs on 4 devices) against the same budget without it and
# against budget 100 without it, at a size the knowledge never measured (4096x4096), 3 seeds.
# Run from the checkout on a machine with an NVIDIA GPU: OUT=folder bash benchmarks/knowledge_live.sh
set -u
OUT=${OUT:?set OUT to a folder for the results}
export IMAGECL_TUNED=$OUT/registry
for p in convolution9 sobel; do
  for s in 0 1 2; do
    for mode in know10 cold10; do
      if [ $mode = know10 ]; then extra="--knowledge benchmarks/results/knowledge"; else extra="--no-knowledge"; fi
      timeout 200 python3 -m imagecl tune examples/$p.icl --size 4096x4096 --device nvidia --budget 10 --seed $s $extra -o $OUT/$p-$mode-$s > $OUT/$p-$mode-$s.txt 2>&1
      echo "$p $mode $s rc=$? $(grep '^best' $OUT/$p-$mode-$s.txt)"
    done
  done
  timeout 300 python3 -m imagecl tune examples/$p.icl --size 4096x4096 --device nvidia --budget 100 --seed 0 --no-knowledge -o $OUT/$p-cold100-0 > $OUT/$p-cold100-0.txt 2>&1
  echo "$p cold100 0 rc=$? $(grep '^best' $OUT/$p-cold100-0.txt)"
done
