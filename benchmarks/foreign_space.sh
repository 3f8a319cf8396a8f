#!/usr/bin/env bash
# The default tuner and Kernel Tuner's strategies on a brute-forced space this project never
# tuned on (issue 17): the convolution cache (RTX 2080 Ti, 15x15 filter on 4096x4096, 5,256 valid
# of 6,768 configurations) that autotuning_methodology 1.0.0 ships in its source distribution
# as tests/.../mockfiles/mock_gpu.json. The file is fetched from PyPI, not kept in this repository.
#
#   bash benchmarks/foreign_space.sh [OUT_DIR] [REPEATS]
#
# Budget: 150 evaluations (the issue's), every strategy `REPEATS` times (default 20).
set -euo pipefail
out=${1:-benchmarks/results/foreign}
repeats=${2:-20}
python=${PYTHON:-python3}
mkdir -p "$out/src"
space="$out/src/conv15-rtx2080ti.kt.json"
if [ ! -s "$space" ]; then
    "$python" -m pip download --quiet --no-deps --no-binary :all: autotuning_methodology==1.0.0 -d "$out/src"
    tar -xzf "$out/src/autotuning_methodology-1.0.0.tar.gz" -O \
        autotuning_methodology-1.0.0/tests/autotuning_methodology/integration/mockfiles/mock_gpu.json > "$space.part"
    mv "$space.part" "$space"
fi
# 150 of the 5,256 valid configurations
"$python" benchmarks/evaluate_tuners.py "$space" --fractions 0.02854 --repeats "$repeats" --model-sizes '' \
    --strategies hybrid,random --out "$out"
