"""Data directory, registered remote files, checksums and downloads."""

from kairo.data._images import ImageSet, image_files, load_images
from kairo.data._mnist import load_mnist, mnist_files
from kairo.data._files import REGISTRY, RemoteFile, data_dir, fetch, gunzip_md5sum

__all__ = ["REGISTRY", "RemoteFile", "data_dir", "fetch", "gunzip_md5sum",
           "load_mnist", "mnist_files", "ImageSet", "load_images", "image_files"]
