"""Launchers shared by every kernel kind that is not a compiled module of ours: small libraries
(C++ in ``include/brainevent/<name>.h``, built by the host compiler) whose XLA FFI handler starts
a kernel compiled elsewhere (a Numba ``cfunc`` on the CPU; an NVRTC, Triton or Numba-CUDA cubin,
or a Python function launching Numba-CUDA kernels, on the GPU).
"""
