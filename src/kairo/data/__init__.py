"""Data directory, registered remote files, checksums and downloads."""

from kairo.data._store import REGISTRY, RemoteFile, data_dir, fetch, sha256sum

__all__ = ["REGISTRY", "RemoteFile", "data_dir", "fetch", "sha256sum"]
