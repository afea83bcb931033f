"""What the model is told of the workspace folders: a section of the system prompt when there
are several, and a message when they change mid-session (the system prompt never changes:
history is append-only, see ``system_prompt.py``).

What the model was last told is read back from the history (the last listing in a user
message, else the system prompt's; none: the primary folder alone), so a resumed session
tells the model of a change made while it was closed too.
"""

from __future__ import annotations

from collections.abc import Sequence

from tiller.model.history import Message
from tiller.workspace.roots import WorkspaceRoots

OPEN = "<workspace-folders>"
CLOSE = "</workspace-folders>"
HOW = (
    "Relative paths resolve in the primary folder, and commands run there. Name a file of "
    "another folder by the folder's name first (e.g. `{example}/src/main.py`) or by its "
    "absolute path; `./x` always means the primary folder's `x`. Tool results show paths the "
    "same way. list_files and grep without a path search every folder."
)
CHANGED = "The workspace folders changed. They are now:\n"


def listing(roots: WorkspaceRoots) -> str:
    """The folders, one a line, between the tags the history is searched for."""
    lines = [
        f"- {f.name}: {f.path}" + (" (primary)" if i == 0 else "")
        for i, f in enumerate(roots.folders)
    ]
    example = roots.folders[1].name if roots.several else roots.folders[0].name
    return "\n".join([OPEN, *lines, CLOSE, HOW.format(example=example)])


def roots_section(roots: WorkspaceRoots) -> str:
    """The system prompt's section (empty for one folder: the prompt names it already)."""
    if not roots.several:
        return ""
    return (
        f"\n\n# Workspace folders\n\nThis workspace has several folders (roots):\n{listing(roots)}"
    )


def _listing_in(text: str) -> str | None:
    start = text.rfind(OPEN)
    if start < 0:
        return None
    end = text.find(CLOSE, start)
    return None if end < 0 else text[start : end + len(CLOSE)]


def _tags(roots: WorkspaceRoots) -> str:
    text = listing(roots)
    return text[: text.index(CLOSE) + len(CLOSE)]


def roots_update(system: str, messages: Sequence[Message], roots: WorkspaceRoots) -> str | None:
    """The message telling the model the folders changed (None: it knows them already)."""
    seen: str | None = None
    for message in reversed(messages):
        if message.role != "user" or seen is not None:
            continue
        for block in reversed(message.content):
            if block.get("type") == "text":
                seen = _listing_in(str(block.get("text", "")))
                if seen is not None:
                    break
    if seen is None:
        seen = _listing_in(system)
    if seen is None:
        seen = _tags(WorkspaceRoots(roots.folders[:1]))
    if seen == _tags(roots):
        return None
    return CHANGED + listing(roots)
