"""The C toolchain and the compile cache: :func:`build_shared_library` builds every shared
library kairo loads (compiled circuits, the benchmark's anchor and bandwidth loop)."""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from kairo._errors import KairoError
from kairo._results import cpu_flags
from kairo.logic.backends._common import GCC_INSTALL, stderr_head, write_text
from kairo.logic.backends._csource import PART_MARKER, PARTS_BEGIN, PARTS_END

C_FLAGS = ("-O2", "-march=native", "-shared", "-fPIC")
PARTS_PER_TU = 64     # generated functions per translation unit in parallel builds


def find_compiler() -> list[str]:
    """The C compiler command: ``$CC`` if set (may carry flags), else gcc, else cc."""
    cc = os.environ.get("CC", "").strip()
    if cc:
        argv = shlex.split(cc)
        exe = shutil.which(argv[0])
        if exe is None:
            raise KairoError(f"C compiler $CC={cc!r} was not found on PATH: install gcc "
                             f"(`{GCC_INSTALL}` on Debian/Ubuntu) or set CC to an installed "
                             f"compiler")
        return [exe, *argv[1:]]
    for name in ("gcc", "cc"):
        exe = shutil.which(name)
        if exe:
            return [exe]
    raise KairoError(f"no C compiler found (looked for $CC, gcc and cc on PATH): install gcc "
                     f"with `{GCC_INSTALL}` (Debian/Ubuntu) or set CC to a C compiler")


def default_cache_dir() -> Path:
    try:
        import platformdirs

        d = Path(platformdirs.user_cache_dir("kairo")) / "c"
        d.mkdir(parents=True, exist_ok=True)
        if os.access(d, os.W_OK):
            return d
    except (ImportError, OSError):      # no platformdirs or an unwritable home: fall back
        pass
    d = Path(tempfile.gettempdir()) / f"kairo-c-{os.getuid() if hasattr(os, 'getuid') else 0}"
    d.mkdir(parents=True, exist_ok=True)
    return d


@lru_cache(maxsize=1)
def _cpu_fingerprint() -> str:
    """-march=native code is only valid on the same CPU model: key the cache on it."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.machine()}|{model}|{' '.join(sorted(cpu_flags()))}"


def _split_units(src: str, n_units: int) -> list[str]:
    """Split c_source output into n_units translation units: the parts spread over the
    first n_units − 1, the rest (kairo_block, kairo_eval, …) in the last. Each unit repeats
    the preamble (macros, typedefs, part prototypes)."""
    head, rest = src.split(PARTS_BEGIN, 1)
    parts_text, tail = rest.split(PARTS_END, 1)
    pieces = [PART_MARKER + p for p in parts_text.split(PART_MARKER)[1:]]
    n = max(1, n_units - 1)
    per = -(-len(pieces) // n)
    units = [head + "".join(pieces[i:i + per]) for i in range(0, len(pieces), per)]
    return units + [head + tail]


def _build(cc: list[str], flags: tuple[str, ...], src: str, out: str, jobs: int,
           csrc: Path) -> None:
    """Compile ``src`` to the shared library ``out``; with several parts per job, compile
    parts in parallel translation units and link them."""
    n_parts = src.count(PART_MARKER) // 2     # prototypes + definitions
    n_units = min(jobs, -(-n_parts // PARTS_PER_TU)) + 1
    def run(cmd):
        try:
            return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
        except OSError as exc:
            raise KairoError(f"could not run the C compiler {cc[0]} ({exc}): install gcc "
                             f"with `{GCC_INSTALL}` or set CC") from None

    def check(cmd, proc):
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise KairoError(f"C compilation of {csrc} failed ({' '.join(cmd)}, exit "
                             f"{proc.returncode}):\n{stderr_head(err)}")

    if n_units <= 2:
        cmd = [*cc, *flags, "-o", out, str(csrc)]
        check(cmd, run(cmd))
        return
    comp = [f for f in flags if f != "-shared"]
    with tempfile.TemporaryDirectory(prefix="kairo-cc-") as tmp:
        procs, objs = [], []
        for i, unit in enumerate(_split_units(src, n_units)):
            path = Path(tmp) / f"unit{i}.c"
            path.write_text(unit)
            objs.append(str(Path(tmp) / f"unit{i}.o"))
            cmd = [*cc, *comp, "-c", "-o", objs[-1], str(path)]
            procs.append((cmd, run(cmd)))
        try:
            for cmd, proc in procs:
                check(cmd, proc)
        finally:
            for _, proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        cmd = [*cc, *flags, "-o", out, *objs]
        check(cmd, run(cmd))


class SharedLibrary(NamedTuple):
    """A built (or cached) shared library and the C source it was built from."""

    path: Path
    source: Path | None       # None when a cached library's source was deleted
    from_cache: bool          # True when the compiler was not called


def _check_jobs(jobs) -> int:
    if jobs is None:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            (os.cpu_count() or 1)
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 1:
        raise KairoError(f"jobs (parallel compiler processes) must be a positive integer, "
                         f"got {jobs!r}")
    return int(jobs)


def build_shared_library(src: str, *, flags: tuple[str, ...] = C_FLAGS, stem: str = "kairo",
                         cache_dir=None, jobs: int | None = None) -> SharedLibrary:
    """Compile the C source ``src`` into a cached shared library.

    The compiler is ``$CC`` (else gcc, else cc; :func:`find_compiler`) with ``flags``, which
    must make a shared library (``-shared -fPIC``). Sources generated by ``c_source`` with
    many gate parts are compiled as up to ``jobs`` (default: the CPU count) translation units
    in parallel and linked. The library is cached under ``cache_dir`` (default
    ``platformdirs.user_cache_dir("kairo")/c``, else a temp folder) as
    ``<stem>-<sha256>.so`` beside its ``.c``, keyed on the source, the flags and the CPU
    (because of ``-march=native``); a cached library is reused without calling the compiler.
    The build goes to a temporary name and is renamed into place, so concurrent builds are
    safe.
    """
    jobs = _check_jobs(jobs)
    key = hashlib.sha256("\0".join([src, " ".join(flags), _cpu_fingerprint()])
                         .encode()).hexdigest()
    if cache_dir is None:
        cache = default_cache_dir()
    else:
        cache = Path(cache_dir)
        try:
            cache.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KairoError(f"C cache folder {cache} cannot be created ({exc}); pass a "
                             f"writable cache_dir") from None
    lib = cache / f"{stem}-{key[:32]}.so"
    csrc = cache / f"{stem}-{key[:32]}.c"
    if lib.is_file():
        return SharedLibrary(lib, csrc if csrc.is_file() else None, True)
    cc = find_compiler()
    write_text(csrc, src, "C source")
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=f".{lib.name}.", suffix=".tmp")
    os.close(fd)
    try:
        _build(cc, flags, src, tmp, jobs, csrc)
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return SharedLibrary(lib, csrc, False)
