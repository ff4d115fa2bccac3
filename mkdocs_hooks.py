"""mkdocs hook: every page in docs/guides/ is in the nav, even one a later change adds.

Pages listed in mkdocs.yml keep their place and title; any other ``docs/guides/*.md`` is
appended to the "Guides" section under its first heading.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _title(page: Path) -> str:
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return page.stem.replace("-", " ").capitalize()


def on_config(config: Any) -> Any:
    """Append the guides the nav does not list yet."""
    docs = Path(config["docs_dir"])
    for section in config["nav"] or []:
        if isinstance(section, dict) and "Guides" in section:
            guides: list[Any] = section["Guides"]
            listed = {path for item in guides for path in item.values()}
            for page in sorted((docs / "guides").glob("*.md")):
                path = f"guides/{page.name}"
                if path not in listed:
                    guides.append({_title(page): path})
    return config
