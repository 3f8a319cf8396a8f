"""A spec for `imagecl tune-kernel examples/handwritten/gemm_spec.py -o DIR`: defines `kernel`."""
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune_matmul import gemm_kernel  # noqa: E402

kernel = gemm_kernel(128)
