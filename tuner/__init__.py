"""The auto-tuner: search strategies, performance models and measurement.

Installed as `imagecl.tuner`. The tuning parameters themselves come from the compiler's
analysis passes (imagecl/passes); this package decides which configurations to measure.
"""
