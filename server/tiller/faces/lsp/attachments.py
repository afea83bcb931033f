"""``tiller/prompt``'s ``attachments`` made into the core's `Attachment` values: checked here,
at the edge, with `InvalidParams` (-32602) naming the attachment and what is wrong."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from tiller.core.session.mentions import read_mention
from tiller.core.session.session import Session
from tiller.core.turn import attachments
from tiller.core.turn.attachments import Attachment
from tiller.errors import InvalidParams
from tiller.protocol import AttachmentParams

MAX_ATTACHMENTS: Final = 20  # per prompt (the API takes up to 100 images a request)


async def attachments_of(
    sent: Sequence[AttachmentParams], session: Session
) -> tuple[Attachment, ...]:
    if len(sent) > MAX_ATTACHMENTS:
        raise InvalidParams(
            f"params.attachments: {len(sent)} attachments; at most {MAX_ATTACHMENTS} a prompt"
        )
    return tuple(
        [await _one(item, session, f"params.attachments[{i}]") for i, item in enumerate(sent)]
    )


async def _one(item: AttachmentParams, session: Session, where: str) -> Attachment:
    match item.kind:
        case "image":
            if item.data is None:
                raise InvalidParams(f"{where}.data: an image needs its base64 data")
            return attachments.image(item.name, item.media_type, item.data, where, item.thumbnail)
        case "file" | "folder" as kind if item.text is None:
            if item.path is None:
                raise InvalidParams(f"{where}.path: a {kind} mention needs a path (or its text)")
            return await read_mention(
                kind, item.path, session.tools, session.tool_context(), session.settings, where
            )
        case kind:
            if item.text is None:
                raise InvalidParams(f"{where}.text: a {kind} mention needs its text")
            return attachments.text(kind, item.name, _located(item) + item.text)


def _located(item: AttachmentParams) -> str:
    """Where a mention's text is from, as its first line (``path: a.py, lines 3-9``)."""
    if item.path is None:
        return ""
    if item.start_line is None:
        return f"path: {item.path}\n"
    end = item.end_line if item.end_line is not None else item.start_line
    return f"path: {item.path}, lines {item.start_line}-{end}\n"
