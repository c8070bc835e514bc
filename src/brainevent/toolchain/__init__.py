"""Toolchain discovery: host compiler, nvcc and the GPU's compute capability.

Each search is an ordered list of small steps over frozen tables; every result
records how it was found (``found_via``). XLA's headers are found by
:mod:`brainevent.headers`; their names are re-exported here.
"""

from ..headers import c_api_digest, xla_include_dir
from .host import HostCompiler, file_identity, find_host_compiler

__all__ = ["HostCompiler", "c_api_digest", "file_identity", "find_host_compiler", "xla_include_dir"]
