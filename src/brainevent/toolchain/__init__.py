"""Toolchain discovery: host compiler, XLA headers, nvcc and the GPU's compute capability.

Each search is an ordered list of small steps over frozen tables; every result
records how it was found (``found_via``).
"""

from .host import HostCompiler, file_identity, find_host_compiler
from .xla import c_api_digest, xla_include_dir

__all__ = ["HostCompiler", "c_api_digest", "file_identity", "find_host_compiler", "xla_include_dir"]
