"""GPU architectures, the one place for them: parsing every spelling users write, detecting the
GPUs' (CUDA driver API, or JAX's devices), what an nvcc can target, and spelling them for nvcc,
NVRTC, Triton and Numba. It reads no settings (callers pass the pin), so config can use it."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import NamedTuple

from ..errors import ArchError, GpuArchDetectionError, ToolchainError, UnsupportedArchError

PIN_VARIABLE = "BRAINEVENT_CUDA_ARCH"  # declared in brainevent.config

# Suffixes nvcc accepts after the number: "a" = arch-specific features (sm_90a, sm_100a),
# "f" = family-specific (sm_100f, CUDA 12.9+). Each maps to the first major that has it.
_SUFFIX_MIN_MAJOR: dict[str, int] = {"": 0, "a": 9, "f": 10}
# One arch in text: "8.6" or "86" / "120" (the last digit is the minor), an optional sm_ or
# compute_ prefix (never with a dot: sm_8.6 is a typo), then a suffix letter.
_TOKEN = re.compile(
    r"(?P<prefix>sm_|compute_)?(?P<major>\d{1,2}?)(?P<dot>\.?)(?P<minor>\d)(?P<suffix>[a-z]?)"
)
_ACCEPTED_FORMS = (
    '"8.6", "86", "sm_86", "compute_86", "90a", "sm_90a", "12.0", the int 86, '
    "the float 8.6, a (major, minor) pair like (8, 6), a list or tuple of these, "
    'or one string of several separated by commas or spaces ("sm_80,sm_90")'
)


class CudaArch(NamedTuple):
    """One compute capability, e.g. ``CudaArch(9, 0, "a")`` for sm_90a."""

    major: int
    minor: int
    suffix: str = ""

    @property
    def number(self) -> str:
        """The digits nvcc uses: "86", "90a", "120"."""
        return f"{self.major}{self.minor}{self.suffix}"

    @property
    def cc(self) -> int:
        """major * 10 + minor, as Triton and Numba number architectures: 90, 120."""
        return self.major * 10 + self.minor

    @property
    def sm(self) -> str:
        return f"sm_{self.number}"

    @property
    def compute(self) -> str:
        return f"compute_{self.number}"

    def __str__(self) -> str:
        return self.sm


def _bad(value: object, why: str) -> ArchError:
    return ArchError(
        f"compute capability {value!r} is not valid: {why}. "
        f'Accepted forms: {_ACCEPTED_FORMS}. For example: compute_capability="sm_86".',
        value=value,
    )


def _make(major: int, minor: int, suffix: str, original: object) -> CudaArch:
    if not 1 <= major < 30 or not 0 <= minor <= 9:
        raise _bad(original, f"major {major} / minor {minor} is out of range")
    if suffix not in _SUFFIX_MIN_MAJOR:
        raise _bad(original, f"unknown suffix {suffix!r} (only 'a' and 'f' exist)")
    if major < _SUFFIX_MIN_MAJOR[suffix]:
        raise _bad(original, f"suffix {suffix!r} exists only from sm_{_SUFFIX_MIN_MAJOR[suffix]}0 on")
    return CudaArch(major, minor, suffix)


def _parse_one(value: object, original: object) -> list[CudaArch]:
    if isinstance(value, CudaArch):
        return [value]
    # bool is an int, but True must not mean sm_1; a float reads as its repr (8.6, 12.0).
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _bad(original, f"a {type(value).__name__} cannot name an architecture")
    tokens = value.replace(",", " ").split() if isinstance(value, str) else [repr(value)]
    if not tokens:
        raise _bad(original, "it is empty")
    archs = []
    for token in tokens:
        m = _TOKEN.fullmatch(token.lower())
        if m is None or (m["prefix"] and m["dot"]):
            raise _bad(original, 'expected <major>.<minor> or two or three digits ("8.6", "86", "sm_120")')
        archs.append(_make(int(m["major"]), int(m["minor"]), m["suffix"], original))
    return archs


def parse_compute_capability(value: object) -> tuple[CudaArch, ...]:
    """One or several compute capabilities, distinct and sorted; else an ArchError naming the bad
    value and the accepted forms."""
    if isinstance(value, CudaArch) or not isinstance(value, tuple | list):  # a CudaArch is a tuple too
        return tuple(sorted(set(_parse_one(value, value))))
    # (8, 6) as torch.cuda.get_device_capability() gives it: a tuple of a small major and a
    # one-digit minor. Two archs written as ints, (80, 90), never fit.
    if isinstance(value, tuple) and len(value) == 2 and all(type(v) is int for v in value):
        with contextlib.suppress(ArchError):
            return (_make(value[0], value[1], "", value),)
    if not value:
        raise _bad(value, "the list is empty")
    return tuple(sorted({arch for item in value for arch in _parse_one(item, item)}))


def one_arch(value: object) -> CudaArch:
    """The one architecture ``value`` names (a list or "sm_80,sm_90" is an error here)."""
    archs = parse_compute_capability(value)
    if len(archs) != 1:
        raise _bad(value, "name one architecture here")
    return archs[0]


def nvrtc_arch(value: object) -> str:
    """NVRTC's ``--gpu-architecture`` for one value: "sm_90a" (a cubin), or "compute_90" (PTX)
    when the value is spelled that way."""
    arch = one_arch(value)
    return arch.compute if str(value).strip().lower().startswith("compute_") else arch.sm


def gencode_flags(archs: Iterable[CudaArch]) -> list[str]:
    """``-gencode`` flags: SASS for every arch, plus PTX for the highest generic one. Explicit flags,
    never ``-arch=native``: without a GPU that silently picks sm_75."""
    ordered = sorted(set(archs))
    flags = [f"-gencode=arch={a.compute},code={a.sm}" for a in ordered]
    # PTX lets a future GPU JIT-compile the module; PTX for sm_90a or sm_100f runs only on
    # that arch (or family), so it is embedded for the highest arch *without* a suffix.
    generic = [a for a in ordered if not a.suffix]
    if generic:
        flags.append(f"-gencode=arch={generic[-1].compute},code={generic[-1].compute}")
    return flags


# (first nvcc version, lowest arch, highest generic arch, suffixes) per release, from nvcc
# --list-gpu-code. An nvcc newer than the last row keeps its minimum but has no known maximum.
_ARCH_SUPPORT: tuple[tuple[tuple[int, int], CudaArch, CudaArch, str], ...] = (
    ((11, 0), CudaArch(3, 5), CudaArch(8, 0), ""),
    ((11, 1), CudaArch(3, 5), CudaArch(8, 6), ""),
    ((11, 4), CudaArch(3, 5), CudaArch(8, 7), ""),
    ((11, 8), CudaArch(3, 5), CudaArch(9, 0), ""),
    ((12, 0), CudaArch(5, 0), CudaArch(9, 0), "a"),
    ((12, 8), CudaArch(5, 0), CudaArch(12, 0), "a"),
    ((12, 9), CudaArch(5, 0), CudaArch(12, 1), "af"),
    ((13, 0), CudaArch(7, 5), CudaArch(12, 1), "af"),
    ((13, 5), CudaArch(7, 5), CudaArch(12, 1), "af"),
)


class ArchSupport(NamedTuple):
    """The range of architectures one nvcc version can compile for."""

    nvcc_version: tuple[int, int]
    lowest: CudaArch
    highest: CudaArch | None  # None: nvcc newer than our table, no known ceiling
    suffixes: frozenset[str]

    def problem(self, arch: CudaArch) -> str | None:
        """Why this nvcc cannot target ``arch``, or None when it can."""
        v = f"{self.nvcc_version[0]}.{self.nvcc_version[1]}"
        if arch.cc < self.lowest.cc:
            return f"nvcc {v} targets {self.lowest.sm} and newer"
        if self.highest is not None and arch.cc > self.highest.cc:
            return f"nvcc {v} targets up to {self.highest.sm}; a newer CUDA is needed"
        if arch.suffix not in self.suffixes:
            return f"nvcc {v} has no '{arch.suffix}' architectures"
        return None

    def __contains__(self, arch: object) -> bool:
        return isinstance(arch, CudaArch) and self.problem(arch) is None


def supported_archs(nvcc_version: tuple[int, int]) -> ArchSupport:
    """The architecture range of an nvcc version (from a table; no subprocess)."""
    version = (nvcc_version[0], nvcc_version[1])
    rows = [r for r in _ARCH_SUPPORT if r[0] <= version]
    if not rows:
        raise ToolchainError(
            f"nvcc {version[0]}.{version[1]} is too old: brainevent needs CUDA 11 or newer.",
            nvcc_version=version,
        )
    _, lowest, highest, suffixes = rows[-1]
    newer_than_table = version > _ARCH_SUPPORT[-1][0]
    return ArchSupport(version, lowest, None if newer_than_table else highest, frozenset({"", *suffixes}))


def check_archs_supported(archs: Iterable[CudaArch], nvcc_version: tuple[int, int]) -> None:
    """Raise :class:`ToolchainError` if this nvcc cannot build for one of ``archs``."""
    support = supported_archs(nvcc_version)
    problems = [(a, p) for a in archs if (p := support.problem(a)) is not None]
    if not problems:
        return
    listed = "; ".join(f"{a.sm}: {p}" for a, p in problems)
    hint = ""
    if any(a.cc < 75 for a, _ in problems) and nvcc_version[0] >= 13:
        hint = (
            " CUDA 13 dropped sm_70 and older: build those GPUs with a CUDA 12 nvcc"
            " (BRAINEVENT_NVCC=/path/to/cuda-12/bin/nvcc)."
        )
    raise UnsupportedArchError(
        f"nvcc {nvcc_version[0]}.{nvcc_version[1]} cannot build for {listed}.{hint}",
        archs=tuple(a.sm for a, _ in problems),
        nvcc_version=tuple(nvcc_version),
    )


def resolve_archs(
    requested: object = None, *, pinned: str | None = None, nvcc_version: tuple[int, int] | None = None
) -> tuple[CudaArch, ...]:
    """The architectures to build for: ``requested`` (``compute_capability="sm_90"``), else ``pinned``
    (BRAINEVENT_CUDA_ARCH, ``config.CUDA_ARCH.get()``), else every distinct arch of the GPUs the
    driver sees; with ``nvcc_version``, checked against what that nvcc can target."""
    archs: tuple[CudaArch, ...]
    if requested is not None:
        archs = parse_compute_capability(requested)
    elif pinned is not None:
        try:
            archs = parse_compute_capability(pinned)
        except ArchError as exc:
            raise ArchError(
                f"{PIN_VARIABLE}={pinned!r}: {exc.message}", variable=PIN_VARIABLE, value=pinned
            ) from None
    elif not (archs := visible_archs()):
        from .cuda_driver import probe_devices

        raise GpuArchDetectionError(
            "cannot tell which GPU architecture to build for: no GPU was found ("
            f"{probe_devices().reason}). To build without a GPU, name the target: pass "
            'compute_capability="sm_90" (or a list such as ["sm_80", "sm_90"]), or set '
            f"{PIN_VARIABLE}=sm_80,sm_90 in the environment.",
            reason=probe_devices().reason,
        )
    if nvcc_version is not None:
        check_archs_supported(archs, nvcc_version)
    return archs


def visible_archs(*, jax_first: bool = False) -> tuple[CudaArch, ...]:
    """The distinct archs of the GPUs the CUDA driver sees (empty without one); with
    ``jax_first``, of the GPUs JAX uses when it has any."""
    if jax_first:
        import jax

        try:
            devices = jax.devices("gpu")
        except RuntimeError:
            devices = []
        found = {one_arch(d.compute_capability) for d in devices if getattr(d, "compute_capability", None)}
        if found:
            return tuple(sorted(found))
    from .cuda_driver import probe_devices  # lazy: ctypes loading only when needed

    return tuple(sorted({CudaArch(d.major, d.minor) for d in probe_devices().devices}))  # none: no GPU
