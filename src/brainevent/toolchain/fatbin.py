"""Which GPU code an artifact carries: the entries of its ELF64 ``.nv_fatbin`` section, so tests and
``brainevent cache info`` tell SASS from PTX without cuobjdump (pip-installed toolkits lack it)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

_FATBIN_MAGIC = 0xBA55ED50
_KINDS = {1: "ptx", 2: "sass"}


@dataclass(frozen=True)
class FatbinEntry:
    kind: str  # "sass" (a cubin for one arch) or "ptx" (forward-compatible code)
    arch: int  # e.g. 80 for sm_80 / compute_80


def _section(data: bytes, wanted: bytes) -> bytes | None:
    if data[:4] != b"\x7fELF" or data[4] != 2:  # ELF64 only
        return None
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_offset = headers[shstrndx][4]
    for name_index, _type, _flags, _addr, offset, size, *_ in headers:
        start = names_offset + name_index
        if data[start : data.index(b"\0", start)] == wanted:
            return data[offset : offset + size]
    return None


def fatbin_entries(path: str | Path) -> list[FatbinEntry]:
    """The SASS and PTX entries embedded in an object or shared library."""
    section = _section(Path(path).read_bytes(), b".nv_fatbin")
    entries: list[FatbinEntry] = []
    pos = 0
    while section is not None and pos + 16 <= len(section):
        magic, _version, header_size, body_size = struct.unpack_from("<IHHQ", section, pos)
        if magic != _FATBIN_MAGIC:
            break
        cursor, end = pos + header_size, pos + header_size + body_size
        while cursor + 32 <= end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", section, cursor)
            arch = struct.unpack_from("<I", section, cursor + 28)[0]
            entries.append(FatbinEntry(_KINDS.get(kind, f"kind{kind}"), arch))
            cursor += entry_header + payload
        pos = end
    return entries
