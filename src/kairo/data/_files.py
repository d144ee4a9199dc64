"""The data directory: where kairo looks for files, and how it fetches missing ones.

Resolution order for the directory: an explicit argument (the CLI's ``--data-dir``), then the
environment variable ``KAIRO_DATA_DIR``, then a per-user cache directory. Its layout mirrors the
original sources (``connectome/winding2023/…``, ``mnist/…``), so a folder prepared by hand, a
CI copy and a downloaded cache are interchangeable.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from kairo._errors import ChecksumError, DataNotFoundError
from kairo._io import sha256sum

__all__ = ["RemoteFile", "REGISTRY", "SOURCES", "data_dir", "fetch", "gunzip_md5sum"]

log = logging.getLogger(__name__)

ENV_VAR = "KAIRO_DATA_DIR"


@dataclass(frozen=True)
class RemoteFile:
    """A file kairo knows: where it lives in the data directory and where it comes from."""

    relpath: str
    urls: tuple[str, ...]
    sha256: str                  # of the file itself; "" when only gunzip_md5 is known
    citation: str = ""
    gunzip_md5: str = ""         # MD5 of the decompressed bytes (gzip streams differ by mirror)

    def digest(self, path) -> tuple[str, str, str]:
        """(kind, expected, actual) for the file at ``path``."""
        if self.gunzip_md5:
            return "MD5 of the decompressed bytes", self.gunzip_md5, gunzip_md5sum(path)
        return "SHA-256", self.sha256, sha256sum(path)


REGISTRY: dict[str, RemoteFile] = {
    "winding2023": RemoteFile(
        relpath="connectome/winding2023/Supplementary-Data-S1.zip",
        urls=(
            "https://github.com/brain-networks/larval-drosophila-connectome/raw/main/"
            "Supplementary-Data-S1.zip",
            "https://raw.githubusercontent.com/brain-networks/larval-drosophila-connectome/"
            "main/Supplementary-Data-S1.zip",
        ),
        sha256="8c1f43809ed5d527ba61b154e377cc21da26383a75eda8aab85ce05607a72a4c",
        citation="Winding et al. (2023) The connectome of an insect brain. Science 379, "
                 "eadd9330. Supplementary Data S1.",
    ),
}

_MNIST_URLS = ("https://ossci-datasets.s3.amazonaws.com/mnist/",
               "https://storage.googleapis.com/cvdf-datasets/mnist/")
for _name, _md5 in (("train-images-idx3-ubyte", "6bbc9ace898e44ae57da46a324031adb"),
                    ("train-labels-idx1-ubyte", "a25bea736e30d166cdddb491f175f624"),
                    ("t10k-images-idx3-ubyte", "2646ac647ad5339dbf082846283269ea"),
                    ("t10k-labels-idx1-ubyte", "27ae3e4e09519cfbb04c329615203637")):
    REGISTRY[f"mnist/{_name}"] = RemoteFile(
        relpath=f"mnist/{_name}.gz", urls=tuple(u + _name + ".gz" for u in _MNIST_URLS),
        sha256="", gunzip_md5=_md5,
        citation="LeCun, Cortes & Burges, The MNIST database of handwritten digits.")

#: Where each adult-brain format comes from and what its files are named (``kairo data
#: sources``): none can be fetched by kairo (logins, licences, sizes), all are read from disk.
SOURCES = {
    "FlyWire Codex (FAFB v783)": (
        "codex.flywire.ai → Download (FlyWire account; CC BY-NC 4.0)",
        "connections.csv.gz (≥ 5 synapses) or connections_no_threshold.csv.gz, "
        "classification.csv.gz, neurons.csv.gz, optionally consolidated_cell_types.csv.gz",
        "kairo reservoir screen --connectome FOLDER  (load_codex)"),
    "Shiu et al. 2024": (
        "github.com/philshiu/Drosophila_brain_model (git LFS)",
        "Connectivity_783.parquet + Completeness_783.csv (or 2023_03_23_connectivity_630_"
        "final.parquet + 2023_03_23_completeness_630_final.csv); Codex's classification.csv.gz "
        "and neurons.csv.gz beside them add annotations",
        "kairo reservoir screen --connectome Connectivity_783.parquet  (load_shiu)"),
    "neuPrint (hemibrain v1.2.1)": (
        "neuprint.janelia.org → hemibrain → exported-traced-adjacencies-v1.2.tar.gz",
        "traced-neurons.csv + traced-total-connections.csv",
        "kairo reservoir screen --connectome FOLDER  (load_neuprint)"),
}


def data_dir(override: str | os.PathLike | None = None) -> Path:
    """Return kairo's data directory (argument > ``$KAIRO_DATA_DIR`` > user cache dir)."""
    if override is not None and str(override) != "":
        return Path(override).expanduser()
    env = os.environ.get(ENV_VAR, "")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("kairo"))


def gunzip_md5sum(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex MD5 of a gzip file's decompressed content ("" if it is not valid gzip)."""
    h = hashlib.md5()
    try:
        with gzip.open(path, "rb") as f:
            while block := f.read(chunk):
                h.update(block)
    except (OSError, EOFError):          # not gzip, or truncated
        return ""
    return h.hexdigest()


def _verify(path: Path, spec: RemoteFile) -> None:
    kind, expected, got = spec.digest(path)
    if got != expected:
        raise ChecksumError(
            f"{path}: {kind} is {got or '(unreadable: not gzip or truncated)'}, expected "
            f"{expected}. The file is corrupt or not the expected release; delete it and let "
            f"kairo download it again, or replace it with the original file.")


def fetch(name: str, root: str | os.PathLike | None = None, *, download: bool | None = None,
          timeout: float = 30.0) -> Path:
    """Return the local path of registered file ``name``, downloading it if needed.

    The file is looked up under the data directory first and verified by checksum. If it is
    missing and ``download`` is true (default: true unless ``$KAIRO_OFFLINE`` is set) it is
    fetched into a temporary file, verified, then moved into place, so an interrupted download
    never leaves a partial file behind.

    Raises
    ------
    DataNotFoundError
        The file is missing and cannot be downloaded; the message says where to put it.
    ChecksumError
        The file exists but its checksum is wrong.
    """
    if name not in REGISTRY:
        raise DataNotFoundError(f"unknown data set {name!r}; known: {', '.join(REGISTRY)}")
    spec = REGISTRY[name]
    base = data_dir(root)
    path = base / spec.relpath
    if path.is_file():
        _verify(path, spec)
        return path
    if download is None:
        download = not os.environ.get("KAIRO_OFFLINE")
    errors = []
    if download:
        for url in spec.urls:
            try:
                _download(url, path, spec, timeout)
                return path
            except ChecksumError:
                raise
            except OSError as exc:  # URLError is an OSError; also covers unwritable dirs
                errors.append(f"{url}: {exc}")
                log.info("download of %s failed: %s", url, exc)
    tried = ("; tried " + " | ".join(errors)) if errors else " (downloads disabled)"
    raise DataNotFoundError(
        f"data file for {name!r} not found at {path}{tried}. Put the original file there "
        f"(source: {spec.urls[0]}, "
        f"{'decompressed md5 ' + spec.gunzip_md5 if spec.gunzip_md5 else 'sha256 ' + spec.sha256}"
        f"), or point kairo at a folder that has "
        f"it with --data-dir or ${ENV_VAR}.")


def _download(url: str, dest: Path, spec: RemoteFile, timeout: float) -> None:
    from kairo._io import atomic_path

    dest.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(dest) as tmp:          # in place only once its checksum is right
        with open(tmp, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            shutil.copyfileobj(resp, out)
        kind, expected, got = spec.digest(tmp)
        if got != expected:
            raise ChecksumError(f"download from {url}: {kind} is {got}, expected {expected}")
