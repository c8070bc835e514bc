"""Toolchain discovery: host compiler, nvcc, the NVIDIA libraries and the GPU's compute
capability. Each search is an ordered list of small steps over frozen tables; every result
records how it was found (``found_via``)."""
