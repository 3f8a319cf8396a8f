"""Code generation: the OpenCL C emitter and the variant generators."""
