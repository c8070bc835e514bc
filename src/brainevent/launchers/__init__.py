"""Launchers shared by every kernel kind that is not a compiled module of ours.

A launcher is a small compiled library (its C++ in ``include/brainevent/<name>.h``) whose XLA
FFI handler starts a kernel compiled elsewhere: a Numba ``cfunc`` on the CPU, a Numba-CUDA or
Triton cubin on the GPU. Numba, Triton and any later path (NVRTC) share this package; none of
them owns it.
"""
