"""Every shell and Python example in the README and the docs runs, so none can rot.

Fenced blocks tagged ``sh``, ``bash`` or ``python`` run as they are; in a ``console`` block
the lines starting with ``$ `` run. Each runs in a fresh directory holding links to the
repository's ``scenarios/``, ``examples/`` and ``docs/`` (so the paths the docs use work and
outputs land in the temporary directory), with l4sim installed. A comment on the line before
a fence changes that:

- ``<!-- docs-test: skip: REASON -->``: not run (an install, root, a long training);
- ``<!-- docs-test: instead: COMMAND -->``: COMMAND runs instead (the quick variant of a
  long run, e.g. ``--quick``).

A block can also say what it must print: a fenced block (``text``) right after it, under
``<!-- docs-test: output -->``, is the standard output it must give, line for line (trailing
spaces aside); ``...`` in it stands for any text, within a line or across lines, as in a
doctest with ELLIPSIS (a time, a path). The reader sees the output under the code; the test
fails when the code prints something else. Rich tables are drawn 80 columns wide.

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
_DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(skip|instead|output)\s*:?\s*(.*?)\s*-->")
TIMEOUT_S = 180


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    code: str
    directive: tuple[str, str] | None
    expected: str | None = None
    """The standard output the block must print (``docs-test: output``), if it says."""

    @property
    def id(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"


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
        before = next((x for x in reversed(lines[:start]) if x.strip()), "")
        d = _DIRECTIVE.search(before)
        if d is not None and d[1] == "output":
            if not out or out[-1].expected is not None:
                raise ValueError(f"{page}:{start + 1}: an expected output follows no example")
            out[-1].expected = "\n".join(body)
            continue
        if lang not in RUN:
            continue
        out.append(Block(page, start + 1, RUN[lang], "\n".join(body), (d[1], d[2]) if d else None))
    return out


def output_mismatch(expected: str, got: str) -> str | None:
    """None when ``got`` (a block's standard output) is ``expected`` (``...`` standing for
    any text; trailing spaces and blank lines at either end ignored), else what differs."""

    def clean(text: str) -> str:
        return "\n".join(x.rstrip() for x in text.strip("\n").splitlines()).strip("\n")

    want, have = clean(expected), clean(got)
    pattern = ".*?".join(re.escape(part) for part in want.split("..."))
    if re.fullmatch(pattern, have, flags=re.DOTALL):
        return None
    import difflib

    diff = difflib.unified_diff(want.splitlines(), have.splitlines(), "expected", "printed")
    return "\n".join(diff)


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


def check(block: Block, tmp_path: Path) -> None:
    """Run ``block`` in ``tmp_path``; it must exit 0 and print what it declares."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    env["COLUMNS"] = "80"  # rich draws its tables this wide, as in a default terminal
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
    if block.expected is not None and block.directive is None:
        diff = output_mismatch(block.expected, done.stdout)
        assert diff is None, f"{block.id} printed other than its docs say:\n{diff}"


@pytest.mark.parametrize("block", ALL, ids=lambda b: b.id)
def test_docs_example_runs(block: Block, tmp_path: Path):
    if block.directive is not None and block.directive[0] == "skip":
        reason = block.directive[1] or "marked skip"
        pytest.skip(f"{block.id}: {reason}")
    check(block, tmp_path)


def test_a_changed_output_fails(tmp_path: Path):
    """The checker compares: an example whose declared output is wrong fails, and the same
    example with its real output (and ``...`` for a part that varies) passes."""
    page = tmp_path / "page.md"
    example = '```python\nprint("goodput", 2 * 21)\nprint("took 0.25 s")\n```\n\n'
    page.write_text(
        example + "<!-- docs-test: output -->\n```text\ngoodput 41\ntook ... s\n```\n",
        encoding="utf-8",
    )
    (wrong,) = blocks(page)
    assert wrong.expected == "goodput 41\ntook ... s"
    work = tmp_path / "run"
    work.mkdir()
    with pytest.raises(AssertionError, match=r"printed other than its docs say(.|\n)*\+goodput 42"):
        check(wrong, work)
    page.write_text(
        example + "<!-- docs-test: output -->\n```text\ngoodput 42\ntook ... s\n```\n",
        encoding="utf-8",
    )
    (right,) = blocks(page)
    work = tmp_path / "again"
    work.mkdir()
    check(right, work)
    assert output_mismatch("a ... c", "a b\nb c") is None
    assert output_mismatch("a ... c", "a b d") is not None


def test_examples_that_print_say_what():
    """The pages a newcomer follows declare their output, so a changed result shows."""
    for name in ("getting-started.md", "first-l4s.md"):
        declared = [b for b in ALL if b.page.name == name and b.expected is not None]
        assert declared, f"{name} declares no example's output"
