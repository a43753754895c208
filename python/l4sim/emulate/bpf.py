"""Scalable kernel senders for ``l4sim emulate``: DCTCP and TCP Prague as BPF ``struct_ops``
congestion controls, for kernels without ``tcp_dctcp`` or ``tcp_prague`` (see
:mod:`l4sim.emulate`).

Each source, ``data/bpf/l4sim_dctcp.bpf.c`` (adapted from the kernel's BPF DCTCP selftest,
GPL-2.0) and ``data/bpf/l4sim_prague.bpf.c`` (Prague's control law after L4STeam's
``tcp_prague.c``), is built with clang against a ``vmlinux.h`` that bpftool dumps from this kernel's
BTF, cached under ``$XDG_CACHE_HOME/l4sim/bpf/<kernel release>-<hash>/`` (the hash covers
the source and the kernel's BTF), registered with ``bpftool struct_ops register`` before a
run (it then appears in ``tcp_available_congestion_control`` as ``l4sim_dctcp``) and
unregistered after it. ``/run/l4sim-bpf/<name>.pid`` names the process that registered
it: a run that was killed leaves its CC registered, and the next run removes it
(:func:`cleanup_leftovers`), as it removes leftover namespaces. A run that finds the CC
registered by a live run uses it and leaves it to that run to remove.

A BPF Prague's host also gets ``data/bpf/l4sim_ect1.bpf.c`` on its TUN device's egress (a
tc program, gone with the namespace): this kernel sends the data of a congestion control
that asks for ECT(1) as ECT(0), and the program rewrites it to ECT(1) (:func:`attach_ect1`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from l4sim.emulate.netns import _pid_alive
from l4sim.errors import EmulationError

_DATA = Path(__file__).parent.parent / "data" / "bpf"


SOURCE = _DATA / "l4sim_dctcp.bpf.c"


SOURCES = {"dctcp": SOURCE, "prague": _DATA / "l4sim_prague.bpf.c"}


"""Each BPF congestion control's source, by the scenario's cca kind."""


ECT1_SOURCE = _DATA / "l4sim_ect1.bpf.c"


BPF_CCAS = {"dctcp": "l4sim_dctcp", "prague": "l4sim_prague"}


"""The scenario's cca kinds that a BPF congestion control can stand in for, by the name it
registers (its ``.name``, also its struct_ops map's name)."""


_BTF = Path("/sys/kernel/btf/vmlinux")


_STATE_DIR = Path("/run/l4sim-bpf")


_INSTALL = "install clang and bpftool: apt-get install clang bpftool libbpf-dev"


_which = shutil.which


"""Finds a tool on PATH (a seam for the missing-tool tests)."""


_euid = os.geteuid


"""The effective user id (a seam for the no-root test)."""


def _available() -> list[str]:
    try:
        return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError:
        return []


def _run(cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise EmulationError(f"`{' '.join(cmd)}` did not finish in {timeout:g} s") from None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"


def verifier_line(text: str) -> str:
    """The verifier's last word in libbpf's output (the line before its statistics), else
    the output's last line."""
    log = text.split("-- BEGIN PROG LOAD LOG --", 1)[-1].split("-- END PROG LOAD LOG --")[0]
    stats = ("processed ", "verification time", "stack depth")
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(stats)]
    return lines[-1] if lines and "-- BEGIN PROG LOAD LOG --" in text else _last_line(text)


def cache_dir() -> Path:
    """Where built objects are kept: ``$XDG_CACHE_HOME/l4sim/bpf`` (``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "l4sim" / "bpf"


_TITLES = {"dctcp": "DCTCP", "prague": "Prague"}


def check_tools(kind: str = "dctcp") -> None:
    """Raise the one-sentence error when this host cannot build or load the BPF CC that
    stands in for ``kind``."""
    title = _TITLES[kind]
    if _euid() != 0:
        raise EmulationError(f"loading a BPF congestion control ({title}) needs root")
    if not _BTF.exists():
        raise EmulationError(
            f"this kernel has no BTF ({_BTF}), which the BPF {title} needs; build the kernel "
            f"with CONFIG_DEBUG_INFO_BTF=y or use a kernel with tcp_{kind}"
        )
    missing = [t for t in ("clang", "bpftool") if _which(t) is None]
    if missing:
        raise EmulationError(f"the BPF {title} needs {' and '.join(missing)}; {_INSTALL}")
    if kind == "prague" and _which("tc") is None:
        raise EmulationError("the BPF Prague's ECT(1) marker needs tc: apt-get install iproute2")


def build(source: Path = SOURCE, kind: str = "dctcp") -> Path:
    """The object file of ``source`` (a part of the BPF ``kind``), built for this kernel (or
    from the cache)."""
    check_tools(kind)
    digest = hashlib.sha256(source.read_bytes())
    with contextlib.suppress(OSError):
        digest.update(_BTF.read_bytes())
    out = cache_dir() / f"{os.uname().release}-{digest.hexdigest()[:16]}"
    obj = out / source.name.replace(".c", ".o")
    if obj.is_file():
        return obj
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        header = Path(tmp) / "vmlinux.h"
        p = _run(["bpftool", "btf", "dump", "file", str(_BTF), "format", "c"])
        if p.returncode != 0:
            raise EmulationError(f"bpftool could not dump the kernel's BTF: {_last_line(p.stderr)}")
        header.write_text(p.stdout)
        part = Path(tmp) / obj.name
        cmd = ["clang", "-O2", "-g", "-target", "bpf", "-I", tmp, "-c", str(source)]
        p = _run([*cmd, "-o", str(part)])
        if p.returncode != 0:
            raise EmulationError(
                f"clang could not build {source.name} ({_last_line(p.stderr)}); {_INSTALL}"
            )
        part.replace(obj)
    return obj


def _pid_file(name: str) -> Path:
    return _STATE_DIR / f"{name}.pid"


def _owner(name: str) -> int | None:
    try:
        return int(_pid_file(name).read_text().strip())
    except (OSError, ValueError):
        return None


def _unregister(name: str) -> None:
    if name in _available():
        _run(["bpftool", "struct_ops", "unregister", "name", name], timeout=20)
    with contextlib.suppress(OSError):
        _pid_file(name).unlink()


def load(kind: str) -> bool:
    """Make the BPF CC standing in for ``kind`` available; True when this process
    registered it (and :func:`unload` must remove it), False when a live run had."""
    name = BPF_CCAS[kind]
    owner = _owner(name)
    if name in _available() and owner is not None and _pid_alive(owner):
        return False
    check_tools(kind)
    if name in _available():  # registered by a run that is gone, or by hand
        _unregister(name)
    obj = build(SOURCES[kind], kind)
    _STATE_DIR.mkdir(parents=True, exist_ok=True)
    # Written before registering: a registered CC without this file is a leftover.
    _pid_file(name).write_text(f"{os.getpid()}\n")
    p = _run(["bpftool", "struct_ops", "register", str(obj)], timeout=60)
    if p.returncode != 0 or name not in _available():
        with contextlib.suppress(OSError):
            _pid_file(name).unlink()
        raise EmulationError(
            f"the kernel refused the BPF {_TITLES[kind]}: {verifier_line(p.stderr + p.stdout)}"
        )
    return True


def attach_ect1(netns: str, dev: str) -> None:
    """Rewrite ECT(0) to ECT(1) on what ``dev`` in ``netns`` sends (a tc egress program)."""
    obj = build(ECT1_SOURCE, "prague")
    bpf_filter = ["bpf", "direct-action", "obj", str(obj), "sec", "tc"]
    for args in (
        ["qdisc", "add", "dev", dev, "clsact"],
        ["filter", "add", "dev", dev, "egress", *bpf_filter],
    ):
        p = _run(["tc", "-n", netns, *args], timeout=20)
        if p.returncode != 0:
            raise EmulationError(
                f"tc could not attach the ECT(1) marker of the BPF Prague: "
                f"{verifier_line(p.stderr + p.stdout)}"
            )


def unload(kind: str) -> None:
    """Unregister the BPF CC standing in for ``kind`` (it must be this process's)."""
    name = BPF_CCAS[kind]
    if _owner(name) == os.getpid():
        _unregister(name)


def cleanup_leftovers() -> list[str]:
    """Unregister the BPF CCs of runs that are gone; returns their names."""
    removed = []
    for name in BPF_CCAS.values():
        owner = _owner(name)
        dead = owner is None or (owner != os.getpid() and not _pid_alive(owner))
        if name in _available() and dead and _which("bpftool") is not None:
            _unregister(name)
            removed.append(name)
        elif owner is not None and dead:
            _unregister(name)
    return removed
