"""Every shell and Python example in the README and the docs runs, so none can rot.

Fenced blocks tagged ``sh``, ``bash`` or ``python`` run as they are; in a ``console`` block
the lines starting with ``$ `` run. Each runs in a fresh directory holding links to the
repository's ``scenarios/``, ``examples/`` and ``docs/`` (so the paths the docs use work and
outputs land in the temporary directory), with l4sim installed. A comment on the line before
a fence changes that:

- ``<!-- docs-test: skip: REASON -->``: not run (an install, root, a long training);
- ``<!-- docs-test: instead: COMMAND -->``: COMMAND runs instead (the quick variant of a
  long run, e.g. ``--quick``).

Generated pages (``docs/reference/``) are left out: their blocks are usage lines.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted(
        p for p in (ROOT / "docs").rglob("*.md") if "reference" not in p.relative_to(ROOT).parts
    ),
]
RUN = {"sh": "sh", "bash": "sh", "shell": "sh", "console": "console", "python": "python"}
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(skip|instead)\s*:?\s*(.*?)\s*-->")
TIMEOUT_S = 180


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    code: str
    directive: tuple[str, str] | None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    out: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(2), m.group(3).lower(), i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(m.group(1)) :])
            i += 1
        i += 1
        if lang not in RUN:
            continue
        before = next((x for x in reversed(lines[:start]) if x.strip()), "")
        d = _DIRECTIVE.search(before)
        out.append(Block(page, start + 1, RUN[lang], "\n".join(body), (d[1], d[2]) if d else None))
    return out


ALL = [b for page in PAGES for b in blocks(page)]


def _workdir(tmp: Path) -> Path:
    for name in ("scenarios", "examples", "docs"):
        (tmp / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp


def _command(block: Block) -> list[str]:
    if block.directive is not None and block.directive[0] == "instead":
        return ["bash", "-euo", "pipefail", "-c", block.directive[1]]
    if block.lang == "python":
        return [sys.executable, "-c", block.code]
    code = block.code
    if block.lang == "console":
        code = "\n".join(x[2:] for x in code.splitlines() if x.startswith("$ "))
    return ["bash", "-euo", "pipefail", "-c", code]


def test_the_docs_have_examples():
    """The collector finds the README's examples (a parser bug would pass vacuously)."""
    readme = [b for b in ALL if b.page.name == "README.md"]
    assert any(b.lang == "python" for b in readme) and any(b.lang == "sh" for b in readme)
    assert len(ALL) >= 20, len(ALL)


@pytest.mark.parametrize("block", ALL, ids=lambda b: b.id)
def test_docs_example_runs(block: Block, tmp_path: Path):
    if block.directive is not None and block.directive[0] == "skip":
        reason = block.directive[1] or "marked skip"
        pytest.skip(f"{block.id}: {reason}")
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    env.pop("L4SIM_DEBUG", None)
    try:
        done = subprocess.run(
            _command(block),
            cwd=_workdir(tmp_path),
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.id} ran over {TIMEOUT_S} s: give it a quick variant (docs-test)")
    assert done.returncode == 0, (
        f"{block.id} failed ({done.returncode}):\n{block.code}\n--- stderr\n{done.stderr[-3000:]}"
    )
