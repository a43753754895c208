"""MkDocs hook: publish the Rust core's API (``cargo doc``) under ``api/rust/doc/``, so the
"Rust core API" page links to it and ``mkdocs build --strict`` checks those links."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

PREFIX = "api/rust/doc"


def on_files(files: Files, config: Any) -> Files:
    root = Path(config["config_file_path"]).resolve().parent
    doc = root / "target" / "doc"
    if shutil.which("cargo") is None:
        raise PluginError("building the docs needs cargo (for the Rust API pages): install Rust")
    # Incremental: a second build with no change takes about a second.
    done = subprocess.run(
        ["cargo", "doc", "--no-deps", "-q", "-p", "l4sim-core"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise PluginError(f"cargo doc failed: {done.stderr.strip()[-2000:]}")
    for path in sorted(doc.rglob("*")):
        # (rustdoc ships a font licence as .md: MkDocs would make it a page.)
        if path.is_file() and not path.name.startswith(".") and path.suffix != ".md":
            rel = path.relative_to(doc).as_posix()
            files.append(File.generated(config, f"{PREFIX}/{rel}", abs_src_path=str(path)))
    return files
