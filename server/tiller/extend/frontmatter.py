"""YAML frontmatter of a markdown file (commands, skills): ``---`` lines around a YAML mapping
at the very start, read with PyYAML's ``safe_load``."""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from tiller.jsontypes import JSON


@dataclass(frozen=True)
class Document:
    meta: JSON = field(default_factory=dict)
    body: str = ""
    problem: str | None = None  # why the frontmatter was not read (then ``meta`` is empty)

    def text(self, key: str) -> str | None:
        """A frontmatter value as text (YAML may read ``1.0`` or ``yes`` as other types)."""
        value = self.meta.get(key)
        if value is None or isinstance(value, dict | list):
            return None
        text = str(value).strip()
        return text or None


def parse(text: str) -> Document:
    """The frontmatter and the body; a file without frontmatter is all body."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return Document(body=text)
    for n, line in enumerate(lines[1:], 1):
        if line.rstrip() == "---":
            raw, body = "".join(lines[1:n]), "".join(lines[n + 1 :])
            break
    else:
        return Document(body=text, problem="the frontmatter has no closing '---'")
    try:
        meta = yaml.safe_load(raw)
    except yaml.YAMLError as err:
        return Document(body=body, problem=f"the frontmatter is not YAML ({err})")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return Document(body=body, problem="the frontmatter is not a mapping")
    return Document({str(k): v for k, v in meta.items()}, body.lstrip("\n"))
