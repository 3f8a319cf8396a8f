"""Runtime on pyopencl: devices, argument marshalling, building and launching kernels."""
