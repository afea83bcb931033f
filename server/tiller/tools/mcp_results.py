"""MCP content as the Messages API takes it in a ``tool_result``.

Text stays text; an image (``ImageContent``, or an embedded resource whose blob is an image)
becomes an ``image`` block the model sees as such; an embedded text resource becomes text
headed by its URI; a resource link, audio, or any other blob becomes a short note. Bounded like
every tool output: text to ``OUTPUT_CAP`` characters in all, at most ``MAX_IMAGES`` images of at
most ``MAX_IMAGE_BYTES`` each (the API's limit for a base64 image is 5 MB).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tiller.jsontypes import JSON
from tiller.tools.base import OUTPUT_CAP, cap_output

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
MAX_IMAGES = 8
MAX_IMAGE_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class Converted:
    blocks: tuple[JSON, ...]  # the tool_result's content
    text: str  # what clients show (images as a note)


def convert(content: Iterable[JSON]) -> Converted:
    parts: list[JSON] = []
    images = 0
    for item in content:
        block = _block(item)
        if block.get("type") == "image":
            size = len(str(block["source"].get("data", "")))
            if images >= MAX_IMAGES or size > MAX_IMAGE_BYTES:
                block = _text(f"[image not shown: {size} base64 characters, or more than "
                              f"{MAX_IMAGES} images]")  # fmt: skip
            else:
                images += 1
        parts.append(block)
    texts = [p["text"] for p in parts if p.get("type") == "text"]
    total = sum(len(t) for t in texts)
    if total > OUTPUT_CAP:  # one text block carries every text, cut as other tools' output
        joined = cap_output("\n".join(texts))
        parts = [_text(joined), *(p for p in parts if p.get("type") != "text")]
    shown = "\n".join(
        p["text"] if p.get("type") == "text" else f"[image {p['source'].get('media_type')}]"
        for p in parts
    )
    return Converted(tuple(parts), shown)


def _text(text: str) -> JSON:
    return {"type": "text", "text": text or "(empty)"}


def _image(media_type: str, data: str) -> JSON:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _block(item: JSON) -> JSON:
    match item.get("type"):
        case "text":
            return _text(str(item.get("text", "")))
        case "image":
            mime = str(item.get("mimeType", ""))
            if mime in IMAGE_TYPES and isinstance(item.get("data"), str):
                return _image(mime, item["data"])
            return _text(f"[image of type {mime or 'unknown'} the model cannot read]")
        case "audio":
            return _text(f"[audio ({item.get('mimeType', 'unknown type')}) not shown]")
        case "resource":
            return _resource(item.get("resource") or {})
        case "resource_link":
            described = f": {item['description']}" if item.get("description") else ""
            mime = f" ({item['mimeType']})" if item.get("mimeType") else ""
            return _text(f"Resource link {item.get('name', '')} <{item.get('uri', '')}>{mime}"
                         f"{described}")  # fmt: skip
        case other:
            return _text(f"[{other} content not shown]")


def _resource(resource: JSON) -> JSON:
    uri = resource.get("uri", "")
    mime = str(resource.get("mimeType") or "")
    if isinstance(resource.get("text"), str):
        return _text(f"Resource <{uri}>{f' ({mime})' if mime else ''}:\n{resource['text']}")
    blob = resource.get("blob")
    if isinstance(blob, str) and mime in IMAGE_TYPES:
        return _image(mime, blob)
    size = len(blob) * 3 // 4 if isinstance(blob, str) else 0
    return _text(f"Resource <{uri}>: binary {mime or 'data'}, about {size} bytes, not shown")
