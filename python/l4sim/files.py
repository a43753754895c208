"""The one rule for the files l4sim reads as input, and for the paths a scenario names.

Scenario files, sweep specs, link traces, policy weights and results' ``summary.json`` are
read through :func:`read_input`: a regular file only (``/dev/zero``, a FIFO, a socket or a
directory is refused: it could be endless or block forever), at most a cap of bytes per kind
(:data:`MAX_SCENARIO_BYTES`, ...), checked on the open file before anything is read. The file
is opened with ``O_NONBLOCK``, so a FIFO never blocks the open. Every refusal is one sentence
naming the file and the cap, raised as the caller's error class.

Relative paths in a scenario (a link's ``trace``, a policy's ``weights``) are resolved
beside the scenario file that names them (:func:`relative_to`, :func:`resolve`), or against
the current directory for a scenario not read from a file.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "MAX_RESULTS_BYTES",
    "MAX_SCENARIO_BYTES",
    "MAX_SPEC_BYTES",
    "MAX_WEIGHTS_BYTES",
    "open_input",
    "read_input",
    "relative_to",
    "resolve",
]

#: Largest scenario file: 64 MiB (a custom topology of 100 000 links is about 10 MB).
MAX_SCENARIO_BYTES = 64 * 2**20
#: Largest sweep spec: 64 MiB (its base scenario inline, and its grid's values).
MAX_SPEC_BYTES = 64 * 2**20
#: Largest policy weights file: 64 MiB, as the core's ``policy::MAX_WEIGHTS_BYTES``.
MAX_WEIGHTS_BYTES = 64 * 2**20
#: Largest ``summary.json`` read back (100 000 flows' entries are about 60 MB).
MAX_RESULTS_BYTES = 512 * 2**20

#: The directory relative paths in a scenario are resolved against (the scenario file's).
_base_dir: ContextVar[Path | None] = ContextVar("l4sim_input_base_dir", default=None)


@contextlib.contextmanager
def relative_to(directory: str | Path | None) -> Iterator[None]:
    """Resolve relative scenario paths (:func:`resolve`) against ``directory`` inside the
    block."""
    token = _base_dir.set(Path(directory) if directory is not None else None)
    try:
        yield
    finally:
        _base_dir.reset(token)


def resolve(spec: str) -> str:
    """The absolute path of ``spec``: a relative one beside the scenario being read
    (:func:`relative_to`), else against the current directory; ``~`` expanded. ``..`` is
    taken as written (``examples/../out`` is ``out``), as a shell's ``cd`` takes it, not
    after following a link the scenario's folder may be."""
    path = Path(spec).expanduser()
    if not path.is_absolute():
        path = (_base_dir.get() or Path.cwd()) / path
    return os.path.normpath(path.absolute())


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 else f"{n} bytes"


@contextlib.contextmanager
def open_input(
    path: str | Path, what: str, cap: int, error: type[Exception] = ValueError
) -> Iterator[BinaryIO]:
    """Input file ``path`` open for reading (``what`` names it in messages: "trace file"):
    a regular file of at most ``cap`` bytes, or ``error`` with one sentence. The caller
    reads at most ``cap`` bytes (the file may grow after the check)."""
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise error(f"{what} {name!r} does not exist") from None
    except OSError as e:
        raise error(f"{what} {name!r} cannot be read ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise error(f"{what} {name!r} is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise error(
                f"{what} {name!r} is not a regular file (a device, FIFO or socket); give a file"
            )
        if st.st_size > cap:
            raise error(
                f"{what} {name!r} is {_size(st.st_size)}, more than the {_size(cap)} "
                f"a {what} may have"
            )
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        try:
            yield fh
        except OSError as e:
            raise error(f"{what} {name!r} cannot be read ({e.strerror or e})") from None


def read_input(path: str | Path, what: str, cap: int, error: type[Exception] = ValueError) -> bytes:
    """The bytes of input file ``path`` (``what`` names it in messages: "scenario file"):
    a regular file of at most ``cap`` bytes, or ``error`` with one sentence."""
    with open_input(path, what, cap, error) as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:  # it grew while being read
        raise error(f"{what} {str(path)!r} is more than the {_size(cap)} a {what} may have")
    return data


def why_write_failed(e: BaseException, where: str | Path) -> str:
    """Why writing under ``where`` failed, as a phrase: an OSError's reason, or the one the
    Parquet writer wraps (``... IO error: No space left on device (os error 28)``, or, when
    the disk fills mid-file, a thrift transport error: then the file system's free space
    tells)."""
    if isinstance(e, OSError):
        return e.strerror or str(e)
    found = re.search(r"IO error: (.*?) \(os error \d+\)", str(e))
    if found:
        return found.group(1)
    with contextlib.suppress(OSError):
        if os.statvfs(where).f_bavail == 0:
            return "No space left on device"
    return f"the Parquet writer failed: {e}"
