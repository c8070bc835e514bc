"""Launchers (C++ in ``include/brainevent/<name>.h``, built by the host compiler) whose XLA FFI
handler starts a kernel compiled elsewhere: a Numba ``cfunc``, a cubin, or Python launching Numba-CUDA."""
