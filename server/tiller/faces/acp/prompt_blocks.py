"""An ACP prompt (content blocks) as the core takes it: its words, and what is attached.

Text blocks are the words (joined as :func:`joined` says). A resource link is mentioned
inline (``@src/a.py``) and, when it names a file or folder inside the workspace, read by the
session's own tools as a mention (so the model gets its contents, confined and bounded like
its own reads). An embedded text resource is mentioned inline and attached with its text; an
embedded image, or an image block, is attached as an image (checked like every image: type by
magic bytes, the API's 5 MB); any other binary resource is described by a note. Audio is
refused, as `promptCapabilities` says.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

from acp import RequestError
from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from tiller.core.session.mentions import read_mention
from tiller.core.session.session import Session
from tiller.core.turn import attachments
from tiller.core.turn.attachments import Attachment
from tiller.errors import InvalidParams

log = logging.getLogger(__name__)

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


def invalid_params(message: str) -> RequestError:
    return RequestError(-32602, f"Invalid params: {message}", {"message": message})


@dataclass(frozen=True)
class AcpPrompt:
    text: str
    attached: tuple[Attachment, ...] = ()
    links: tuple[Path, ...] = ()  # files and folders in the workspace, read when it starts

    async def attachments(self, session: Session) -> tuple[Attachment, ...]:
        """What goes with the prompt: the linked files and folders read (an unreadable one
        stays a mention in the words alone), then the embedded resources and images."""
        read: list[Attachment] = []
        for link in self.links:
            kind: Literal["file", "folder"] = "folder" if link.is_dir() else "file"
            shown = str(link.relative_to(session.workspace))
            try:
                context = session.tool_context()
                mention = read_mention(kind, shown, session.tools, context, session.settings)
                read.append(await mention)
            except InvalidParams as err:
                log.info("resource link not attached: %s", err.message)
        return (*read, *self.attached)


def _path_of(uri: str, workspace: Path) -> Path | None:
    """The workspace path a ``file:`` URI names, if it is inside the workspace."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = Path(unquote(parsed.path))
    return path if path.is_relative_to(workspace) else None


def shown_uri(uri: str, workspace: Path) -> str:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = Path(unquote(parsed.path))
    with contextlib.suppress(ValueError):
        return str(path.relative_to(workspace))
    return str(path)


def blob_size(blob: str) -> int:
    """The size in bytes of base64 ``blob`` (estimated when it is not valid base64)."""
    try:
        return len(base64.b64decode(blob, validate=False))
    except (binascii.Error, ValueError):
        return len(blob) * 3 // 4


def blob_note(uri: str, mime_type: str | None, size: int) -> str:
    """What the model is told of a binary resource that is not an image the model takes."""
    kind = mime_type or "unknown type"
    return f"[binary resource {uri}, {kind}, {size} bytes: not shown to the model]"


def _image(name: str, mime_type: str | None, data: str, where: str) -> Attachment:
    try:
        return attachments.image(name, mime_type, data, where)
    except InvalidParams as err:
        raise invalid_params(err.message) from err


def joined(pieces: Sequence[tuple[str, bool]]) -> str:
    """The prompt's words from its pieces (``(text, is_a_text_block)``), in order. Clients
    split a sentence around a mention (``"look at "``, ``@a.py``, ``" please"``) and keep the
    spaces themselves; where neither side has one, two text blocks are two paragraphs
    (``Talk slowly.`` and ``Go on.``) and a mention is a word of its own."""
    words = ""
    previous_is_text = False
    for text, is_text in pieces:
        if words and text and not words[-1].isspace() and not text[0].isspace():
            words += "\n\n" if is_text and previous_is_text else " "
        words += text
        previous_is_text = is_text
    return words


def prompt_of(blocks: Sequence[PromptBlock], workspace: Path) -> AcpPrompt:
    inline: list[tuple[str, bool]] = []
    notes: list[str] = []
    attached: list[Attachment] = []
    links: list[Path] = []
    for index, block in enumerate(blocks):
        where = f"prompt[{index}]"
        match block:
            case TextContentBlock(text=text):
                inline.append((text, True))
            case ResourceContentBlock(uri=uri):
                inline.append((f"@{shown_uri(uri, workspace)}", False))
                path = _path_of(uri, workspace)
                if path is not None and path not in links:
                    links.append(path)
            case EmbeddedResourceContentBlock(resource=TextResourceContents(uri=uri, text=text)):
                shown = shown_uri(uri, workspace)
                inline.append((f"@{shown}", False))
                attached.append(attachments.text("file", shown, text))
            case EmbeddedResourceContentBlock(
                resource=BlobResourceContents(uri=uri, blob=blob, mime_type=mime_type)
            ):
                shown = shown_uri(uri, workspace)
                inline.append((f"@{shown}", False))
                try:  # an image is attached as one; anything else (a bad one too) a note
                    attached.append(attachments.image(shown, mime_type, blob, where))
                except InvalidParams:
                    notes.append(blob_note(uri, mime_type, blob_size(blob)))
            case ImageContentBlock(data=data, mime_type=mime_type, uri=uri):
                name = shown_uri(uri, workspace) if uri else f"image {len(attached) + 1}"
                attached.append(_image(name, mime_type, data, where))
            case _:
                raise invalid_params(
                    f"{block.type} content is not supported (promptCapabilities says so)"
                )
    text = joined(inline) + "".join(f"\n\n{note}" for note in notes)
    return AcpPrompt(text, tuple(attached), tuple(links))
