"""Entry-point specs: which C++ functions to expose and how each parameter maps to JAX.

:func:`brainevent.spec.resolve.resolve_functions` is what the rest of the library calls. Nothing is
imported here: a cache hit needs only :mod:`brainevent.spec.model`, and the C++ reader is not cheap to import.
"""
