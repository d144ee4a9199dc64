"""Writing files and folders safely, and hashing them: the leaf every layer above writes
through. A file or folder appears whole or not at all (written into a temporary sibling,
then renamed); :func:`jsonable` is the JSON fallback for NumPy values and paths;
:func:`sha256sum` / :func:`file_sha256` checksum the files a run reads and the data
registry verifies. Imports no kairo module but :mod:`kairo._errors`."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from kairo._errors import KairoError

__all__ = ["atomic_path", "atomic_write", "atomic_write_text", "atomic_folder", "jsonable",
           "sha256sum", "file_sha256"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path, suffix: str = ".tmp"):
    """Yield a temporary sibling of ``path`` to write; on success it is renamed over ``path``,
    on error deleted: readers never see a half-written file, and a failure leaves the old
    file (or none). For a file written over time (a video, a download); ``suffix`` for
    writers that infer the format from the name."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())      # mkstemp's 0600 would make results private
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write(path, write) -> Path:
    """Call ``write(tmp)`` on a temporary sibling of ``path``, then rename it over ``path``
    (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        write(str(tmp))
    return Path(path)


def atomic_write_text(path, text: str) -> Path:
    """``atomic_write`` of a text file."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def _make_parent(out: Path) -> None:
    """Create ``out``'s parent folders; a file in the way is named, not a raw OSError."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((a for a in [out.parent, *out.parent.parents]
                        if a.exists() and not a.is_dir()), out.parent)
        raise KairoError(f"cannot create the output folder {out}: {blocker} is a file, not a "
                         f"folder") from None


@contextlib.contextmanager
def atomic_folder(out, *, overwrite: bool = False):
    """Yield a hidden temporary sibling of the folder ``out`` to write into; on success it is
    renamed to ``out`` (replacing an old folder only with ``overwrite``), on error deleted, so
    readers never see a half-written folder."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise KairoError(f"output folder {out} already exists; choose another --out "
                         f"or pass --overwrite")
    _make_parent(out)
    # absolute: a run that changes directory (the demo's steps run inside its folder) must
    # still find the folder it writes
    tmp = Path(tempfile.mkdtemp(dir=out.parent.absolute(), prefix=f".{out.name}."))
    os.chmod(tmp, 0o777 & ~_umask())      # mkdtemp's 0700 would make results private
    try:
        yield tmp
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def jsonable(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def sha256sum(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


_SHA_CACHE: dict[tuple, str] = {}


def file_sha256(path) -> str:
    """SHA-256 of a file, remembered per (path, size, mtime) within the process."""
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    if key not in _SHA_CACHE:
        _SHA_CACHE[key] = sha256sum(path)
    return _SHA_CACHE[key]
