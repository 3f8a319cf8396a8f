"""Wavefront programs (docs/wavefront.md): execution by anti-diagonals split between a CPU and
GPUs (executor.py, split.py), their kernels (kernels.py), and tuning the split (synthetic.py,
model.py, tune.py)."""
