"""``@path`` mentions read by the server: a file's numbered lines, a folder's listing.

They are read by the session's own ``read_file`` and ``list_files`` tools, so a mention is
confined to the workspace, bounded, and gitignore-aware exactly as the model's reads are; a
file mentioned counts as read (the model has seen it, so it may edit it). A path a ``Read``
deny rule covers (``Read(./.env)``) is refused as the model's read of it would be, naming the
rule: a mention never carries to the model what the rules keep from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from tiller.core.permissions.rule_files import book_of
from tiller.core.permissions.rules import Place, Rule
from tiller.core.turn import attachments
from tiller.core.turn.attachments import TextAttachment
from tiller.errors import InvalidParams
from tiller.extend.settings_layer import Settings
from tiller.tools.base import Tool, ToolContext

TOOL_OF: dict[str, str] = {"file": "read_file", "folder": "list_files"}


async def read_mention(
    kind: Literal["file", "folder"],
    path: str,
    tools: Mapping[str, Tool] | Sequence[Tool],
    context: ToolContext,
    settings: Callable[[], Settings],
    where: str = "mention",
) -> TextAttachment:
    """The mention of ``path`` as the model reads it; `InvalidParams` naming ``where`` when it
    cannot be read (outside the workspace, missing, binary, denied by a rule, ...).
    ``settings``: the session's settings files as they are now (``Session.settings``), whose
    deny rules the mention must pass."""
    by_name = tools if isinstance(tools, Mapping) else {tool.name: tool for tool in tools}
    name = TOOL_OF[kind]
    tool = by_name.get(name)
    if tool is None:
        raise InvalidParams(f"{where}: {kind} mentions need the {name} tool")
    rule = await asyncio.to_thread(_denying, name, path, context.workspace, settings)
    if rule is not None:
        raise InvalidParams(f"{where}: cannot mention {path!r}: denied by the permission "
                            f"{rule.describe()}")  # fmt: skip
    result = await tool.run({"path": path}, context)
    if result.is_error:
        raise InvalidParams(f"{where}: cannot mention {path!r}: {result.output}")
    return attachments.text(kind, path, result.output)


def _denying(
    tool: str, path: str, workspace: Path, settings: Callable[[], Settings]
) -> Rule | None:
    """The deny rule that decides a read of ``path`` by ``tool``, if one does."""
    rule = book_of(settings()).for_call(tool, {"path": path}, Place.of(workspace))
    return rule if rule is not None and rule.effect == "deny" else None
