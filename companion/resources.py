"""Files that ship inside the package (templates, static files, demo data, the runtime nets).

Found through ``importlib.resources``, so a wheel installed anywhere finds them, not only a
checkout.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def package_path(*parts: str) -> Path:
    """The path of a file or folder shipped in the ``companion`` package."""
    return Path(str(files("companion").joinpath(*parts)))
