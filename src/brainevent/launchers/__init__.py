"""Launchers shared by every kernel kind that is not a compiled module of ours: small compiled
libraries (C++ in ``include/brainevent/<name>.h``) whose XLA FFI handler starts a kernel compiled
elsewhere (a Numba ``cfunc`` on the CPU; a Numba-CUDA, Triton or NVRTC cubin on the GPU).
"""
