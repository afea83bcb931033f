"""What a prompt carries besides its words: @-mentions (text the model reads) and images.

A face makes `Attachment` values at its edge (the Tiller protocol's ``attachments``, ACP's
resource and image blocks, ``tiller chat``'s ``@path``); the session puts them in the turn's
user message before the prompt's words (the words stay the last block, where the loop finds
them) and the event log keeps their `summary`, so a redraw shows the chips and thumbnails.

Images follow the Messages API's vision docs
(https://docs.anthropic.com/en/docs/build-with-claude/vision): base64 ``image`` blocks of
``image/jpeg``, ``image/png``, ``image/gif`` or ``image/webp``, at most 5 MB each (the API
measures the base64 text: "image exceeds 5 MB maximum"). The type is checked against the
data's magic bytes, as the API does ("The image was specified using the image/jpeg media type,
but the image appears to be a image/png image").
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Final

from tiller.errors import InvalidParams
from tiller.jsontypes import JSON
from tiller.protocol import AttachmentKind

IMAGE_TYPES: Final = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_IMAGE_BASE64: Final = 5 * 1024 * 1024  # the API's limit, on the base64 text
MAX_TEXT_CHARS: Final = 100_000  # one mention's text (a file is read bounded before that)
THUMBNAIL_MAX_BASE64: Final = 64 * 1024  # an image this small is kept in the event log whole


@dataclass(frozen=True)
class TextAttachment:
    """A mention the model reads as text: a file, folder, symbol, selection, problems, ..."""

    kind: AttachmentKind
    name: str
    text: str


@dataclass(frozen=True)
class ImageAttachment:
    name: str
    media_type: str
    data: str  # base64
    thumbnail: str | None = None  # a small data: URL the client made, for the log

    @property
    def size(self) -> int:
        """Its size in bytes, decoded."""
        return len(self.data) * 3 // 4 - self.data[-2:].count("=")


Attachment = TextAttachment | ImageAttachment


def sniff_image(head: bytes) -> str | None:
    """The media type that ``head`` (the first bytes of a file) starts like, if an image."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


THUMBNAIL_PREFIXES: Final = tuple(f"data:{kind};base64," for kind in IMAGE_TYPES)


def image(
    name: str,
    media_type: str | None,
    data: str,
    where: str = "image",
    thumbnail: str | None = None,
) -> ImageAttachment:
    """A checked image attachment (``data``: base64; ``thumbnail``: a small ``data:`` URL
    for the log); `InvalidParams` naming ``where`` and what is wrong otherwise."""
    if thumbnail is not None and (
        not thumbnail.startswith(THUMBNAIL_PREFIXES) or len(thumbnail) > THUMBNAIL_MAX_BASE64
    ):
        raise InvalidParams(
            f"{where}.thumbnail: must be a data:image/... base64 URL of at most "
            f"{THUMBNAIL_MAX_BASE64} characters"
        )
    if media_type not in IMAGE_TYPES:
        raise InvalidParams(
            f"{where}.mediaType: {media_type!r} is not an image type the model takes; "
            f"expected one of {', '.join(IMAGE_TYPES)}"
        )
    if len(data) > MAX_IMAGE_BASE64:
        raise InvalidParams(
            f"{where}.data: the image is {len(data)} bytes of base64; at most {MAX_IMAGE_BASE64} "
            "(5 MB) are accepted: make it smaller"
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as err:
        raise InvalidParams(f"{where}.data: not valid base64 ({err})") from err
    found = sniff_image(raw[:16])
    if found is None:
        raise InvalidParams(f"{where}.data: not a png, jpeg, gif or webp image")
    if found != media_type:
        raise InvalidParams(
            f"{where}.mediaType: the image was sent as {media_type} but its data is {found}"
        )
    return ImageAttachment(name, media_type, data, thumbnail)


def image_from_bytes(name: str, raw: bytes) -> ImageAttachment:
    """An image file's bytes as an attachment (its type read from its magic bytes)."""
    found = sniff_image(raw[:16])
    if found is None:
        raise InvalidParams(f"{name}: not a png, jpeg, gif or webp image")
    return image(name, found, base64.b64encode(raw).decode("ascii"), name)


def text(kind: AttachmentKind, name: str, body: str) -> TextAttachment:
    """A text mention, cut (and marked) past `MAX_TEXT_CHARS`."""
    if len(body) > MAX_TEXT_CHARS:
        body = body[:MAX_TEXT_CHARS] + f"\n… [cut: {len(body)} characters in all]"
    return TextAttachment(kind, name, body)


def to_block(attachment: Attachment) -> JSON:
    """The content block the model gets."""
    match attachment:
        case TextAttachment(kind=kind, name=name, text=body):
            quoted = name.replace('"', "'")
            return {
                "type": "text",
                "text": f'<context kind="{kind}" name="{quoted}">\n{body}\n</context>',
            }
        case ImageAttachment(media_type=media_type, data=data):
            return {
                "type": "image",
                "source": {"type": "base64", "media_type": media_type, "data": data},
            }


def summary(attachment: Attachment) -> JSON:
    """What the event log keeps (``AttachmentSummary``): the chip, and a small image whole."""
    match attachment:
        case TextAttachment(kind=kind, name=name, text=body):
            return {"kind": kind, "name": name, "bytes": len(body.encode("utf-8"))}
        case ImageAttachment(name=name, media_type=media_type, data=data):
            shown: JSON = {
                "kind": "image",
                "name": name,
                "mediaType": media_type,
                "bytes": attachment.size,
            }
            if attachment.thumbnail is not None:
                shown["thumbnail"] = attachment.thumbnail
            elif len(data) <= THUMBNAIL_MAX_BASE64:
                shown["thumbnail"] = f"data:{media_type};base64,{data}"
            return shown
