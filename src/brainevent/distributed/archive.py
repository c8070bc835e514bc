"""A cache entry's directory as one byte string, and back.

An uncompressed tar of the entry's regular files; unpacking accepts only plain relative
names and regular files, so an archive can never write outside the staging directory.
"""

from __future__ import annotations

import io
from pathlib import Path, PurePosixPath

from ..errors import CacheError

# How every refused transfer ends: the way out.
FALLBACK = "Set BRAINEVENT_DISTRIBUTED_BUILD=0 to compile in every process."


def pack(directory: Path) -> bytes:
    import tarfile  # slow to import: only a job's builder and receivers need it

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(directory.rglob("*")):
            if path.is_file() and not path.is_symlink():
                tar.add(path, arcname=path.relative_to(directory).as_posix(), recursive=False)
    return buffer.getvalue()


def unpack(data: bytes, staging: Path) -> None:
    """Writes the archive's plain files under ``staging``; CacheError on anything else."""
    import tarfile

    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for member in tar.getmembers():
                name = PurePosixPath(member.name)
                if not member.isfile() or name.is_absolute() or ".." in name.parts or not name.parts:
                    raise CacheError(
                        f"the module archive received from the job's builder holds {member.name!r}, "
                        f"which is not a plain file inside the entry; the transfer was refused. {FALLBACK}",
                        path=member.name,
                    )
                target = staging.joinpath(*name.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:  # a regular file always has contents
                    raise tarfile.TarError(f"no contents for {member.name!r}")
                target.write_bytes(source.read())
    except (
        tarfile.TarError,
        EOFError,
        ValueError,
        NotADirectoryError,
        IsADirectoryError,
        FileExistsError,
    ) as exc:
        raise CacheError(
            f"the module archive received from the job's builder is malformed ({type(exc).__name__}: "
            f"{exc}); the transfer was refused. {FALLBACK}",
            path=str(staging),
        ) from None
