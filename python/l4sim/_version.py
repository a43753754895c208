"""Package version, from the installed metadata (maturin takes it from Cargo.toml)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("l4sim")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+unknown"
