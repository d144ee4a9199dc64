"""Serving a report: on 127.0.0.1 only, a port in use named, and ``kairo report --serve``
stopped by Ctrl-C with its site written."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request

import pytest

from kairo import KairoError
from kairo.report import build_site, make_server, select_runs


@pytest.fixture
def site(tmp_path, store, make_run):
    make_run(store, "reservoir run", {"task": "narma10"}, metrics={"nrmse": 0.8},
             files={"f.png": None})
    return build_site(store, select_runs(store), tmp_path / "site").parent


def test_the_site_is_served_on_loopback_only(site):
    server = make_server(site, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1" and port > 0
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=10) as r:
            assert r.status == 200 and "kairo report" in r.read().decode()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/runs/1/f.png", timeout=10) as r:
            assert r.read()[:4] == b"\x89PNG"
    finally:
        server.shutdown()
        server.server_close()
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_a_port_in_use_and_a_folder_without_a_site_are_named(site, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(KairoError, match=f"port {port} on 127.0.0.1 is in use; choose "
                                             f"another --port"):
            make_server(site, port)
    with pytest.raises(KairoError, match="no report site in .*index.html is missing"):
        make_server(tmp_path, 0)


def test_kairo_report_serve_stops_on_ctrl_c(tmp_path, store, site):
    """The command builds the site, serves it until SIGINT, then writes the folder and
    exits 0."""
    out = tmp_path / "served"
    env = {**os.environ, "KAIRO_STORE": str(store.path)}
    # Ctrl-C's default action in the child even when this run ignores SIGINT (a background
    # job of a non-interactive shell): Python only turns SIGINT into KeyboardInterrupt when
    # it was not ignored at start-up
    proc = subprocess.Popen([sys.executable, "-m", "kairo.cli", "report", "--serve",
                             "--port", "0", "--out", str(out)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_default_sigint)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr], daemon=True).start()
    try:
        url = None
        while url is None:
            line = lines.get(timeout=60)
            m = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
            url = m and m.group(1)
        with urllib.request.urlopen(url + "index.html", timeout=10) as r:
            assert "kairo report" in r.read().decode()
        assert not out.exists()             # written when the server stops
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stdout
    assert (out / "index.html").is_file() and f"results: {out}" in stdout
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".served")] == []


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
