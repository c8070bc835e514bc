"""Toolchain discovery: the host compiler, nvcc, NVIDIA's libraries and the GPUs' architectures.
Each search records how it found its answer (``found_via``)."""
