"""Serve a report site over HTTP on 127.0.0.1 only (the standard library's ``http.server``):
the site is a results viewer, not something to expose on a network."""

from __future__ import annotations

import errno
import functools
import logging
from pathlib import Path

from kairo._errors import KairoError

__all__ = ["make_server", "serve", "HOST"]

HOST = "127.0.0.1"
log = logging.getLogger(__name__)
progress = logging.getLogger("kairo.progress")


def _handler_class():
    # http.server is imported only to serve: the command line starts without it
    from http.server import SimpleHTTPRequestHandler

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format, *args):       # requests go to the log, not stderr
            log.debug("%s %s", self.address_string(), format % args)

    return Handler


def make_server(folder, port: int = 8000):
    """An HTTP server for the site in ``folder`` on 127.0.0.1:``port`` (0: a free port; the
    one taken is ``server.server_address[1]``), not yet serving: call ``serve_forever()``
    (in a thread to run it alongside), then ``shutdown()`` and ``server_close()``."""
    from http.server import ThreadingHTTPServer

    folder = Path(folder)
    if not (folder / "index.html").is_file():
        raise KairoError(f"no report site in {folder}: index.html is missing (build one with "
                         f"kairo report --out {folder})")
    handler = functools.partial(_handler_class(), directory=str(folder))
    try:
        return ThreadingHTTPServer((HOST, int(port)), handler)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise KairoError(f"port {port} on {HOST} is in use; choose another --port (0 "
                             f"picks a free one)") from None
        raise KairoError(f"cannot serve on {HOST}:{port}: {exc.strerror or exc}") from None


def serve(folder, port: int = 8000) -> None:
    """Serve the site in ``folder`` on http://127.0.0.1:``port``/ until Ctrl-C, which stops
    it cleanly."""
    server = make_server(folder, port)
    try:
        progress.info("serving %s at http://%s:%d/ (Ctrl-C stops)", folder, HOST,
                      server.server_address[1])
        server.serve_forever()
    except KeyboardInterrupt:
        progress.info("stopped serving %s", folder)
    finally:
        server.server_close()
