"""``@path`` mentions read by the server: a file's numbered lines, a folder's listing.

They are read by the session's own ``read_file`` and ``list_files`` tools, so a mention is
confined to the workspace, bounded, and gitignore-aware exactly as the model's reads are; a
file mentioned counts as read (the model has seen it, so it may edit it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from tiller.core import attachments
from tiller.core.attachments import TextAttachment
from tiller.errors import InvalidParams
from tiller.workspace.tools.base import Tool, ToolContext

TOOL_OF: dict[str, str] = {"file": "read_file", "folder": "list_files"}


async def read_mention(
    kind: Literal["file", "folder"],
    path: str,
    tools: Mapping[str, Tool] | Sequence[Tool],
    context: ToolContext,
    where: str = "mention",
) -> TextAttachment:
    """The mention of ``path`` as the model reads it; `InvalidParams` naming ``where`` when it
    cannot be read (outside the workspace, missing, binary, ...)."""
    by_name = tools if isinstance(tools, Mapping) else {tool.name: tool for tool in tools}
    tool = by_name.get(TOOL_OF[kind])
    if tool is None:
        raise InvalidParams(f"{where}: {kind} mentions need the {TOOL_OF[kind]} tool")
    result = await tool.run({"path": path}, context)
    if result.is_error:
        raise InvalidParams(f"{where}: cannot mention {path!r}: {result.output}")
    return attachments.text(kind, path, result.output)
