"""The call side: how a kernel's ``outs`` become the result types of an XLA custom call.

Every call path (module functions, the Numba and Triton bridges, ``XLACustomKernel``) goes
through :mod:`.results` and :mod:`.ffi`, so a rule about result types is written once.
"""
