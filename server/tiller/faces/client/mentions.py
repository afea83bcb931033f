"""``@path`` in a terminal prompt (``tiller chat``, ``tiller run``): each ``@`` token that names
a file or folder of the workspace is attached to the prompt (the server reads it, confined and
bounded); an image file is attached as an image. ``tiller run --image PATH`` attaches an image
by path. Tokens that name nothing (``@someone``) stay words. (``tiller chat`` completes
``@path`` as it is typed: `tiller.faces.chat.completion`.)
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from tiller.core.turn.attachments import MAX_IMAGE_BASE64, sniff_image
from tiller.errors import TillerError
from tiller.jsontypes import JSON
from tiller.workspace.roots import WorkspaceRoots

MENTION: Final = re.compile(r"(?:^|(?<=\s))@(\S+)")


class AttachError(TillerError):
    """An image given by path that cannot be attached (missing, not an image, too large)."""


def _inside(raw: str, roots: WorkspaceRoots) -> Path | None:
    """The existing file or folder ``raw`` names in a root (folder-qualified paths too)."""
    path = roots.absolute(raw.rstrip(".,;:!?)")).resolve()
    held = any(path.is_relative_to(root) for root in roots.paths)
    return path if held and path.exists() else None


def image_attachment(path: Path, shown: str) -> JSON:
    """An image file as a ``tiller/prompt`` attachment (type read from its magic bytes)."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise AttachError(f"{shown}: cannot read it ({err.strerror})") from err
    media_type = sniff_image(data[:16])
    if media_type is None:
        raise AttachError(f"{shown}: not a PNG, JPEG, GIF or WebP image")
    encoded = base64.b64encode(data).decode("ascii")
    if len(encoded) > MAX_IMAGE_BASE64:
        raise AttachError(f"{shown}: {len(data)} bytes; images up to 3.75 MB can be sent")
    return {"kind": "image", "name": shown, "mediaType": media_type, "data": encoded}


def prompt_params(text: str, workspace: Path | WorkspaceRoots, images: Sequence[Path] = ()) -> JSON:
    """``tiller/prompt``'s params for ``text``: its ``@path`` mentions (in any root of
    ``workspace``, shown as the server shows paths) and ``images`` attached (a slash command
    takes none)."""
    if text.lstrip().startswith("/"):
        return {"text": text}
    roots = workspace if isinstance(workspace, WorkspaceRoots) else WorkspaceRoots.of(workspace)
    attached: list[JSON] = [image_attachment(path, str(path)) for path in images]
    seen: set[Path] = set()
    for match in MENTION.finditer(text):
        path = _inside(match.group(1), roots)
        if path is None or path in seen:
            continue
        seen.add(path)
        shown = roots.shown(path)
        if path.is_dir():
            attached.append({"kind": "folder", "name": shown, "path": shown})
        elif _looks_like_image(path):
            attached.append(image_attachment(path, shown))
        else:
            attached.append({"kind": "file", "name": shown, "path": shown})
    return {"text": text, "attachments": attached} if attached else {"text": text}


def _looks_like_image(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return sniff_image(f.read(16)) is not None
    except OSError:
        return False
