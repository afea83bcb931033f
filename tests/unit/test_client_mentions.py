"""`@path` in a terminal prompt: what is attached, and what `tiller chat` completes."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from tiller.faces.chat.completion import PathCompleter
from tiller.faces.client.mentions import AttachError, prompt_params

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAA"
    "AABJRU5ErkJggg=="
)


def test_at_paths_of_the_workspace_are_attached_and_other_ats_stay_words(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    (tmp_path / "s.png").write_bytes(PNG_1PX)
    params = prompt_params("see @src/a.py, @src and @s.png; mail @bob or @../etc", tmp_path)
    attached = [(a["kind"], a["name"]) for a in params["attachments"]]
    assert attached == [("file", "src/a.py"), ("folder", "src"), ("image", "s.png")]
    assert params["text"] == "see @src/a.py, @src and @s.png; mail @bob or @../etc"
    assert prompt_params("/mode plan @src", tmp_path) == {"text": "/mode plan @src"}
    assert prompt_params("no mentions", tmp_path) == {"text": "no mentions"}


def test_an_image_by_path_must_be_one(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("words")
    with pytest.raises(AttachError, match="not a PNG, JPEG, GIF or WebP image"):
        prompt_params("look", tmp_path, [tmp_path / "n.txt"])


def test_chat_completes_the_at_path_being_typed(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("")
    (tmp_path / "src" / "api.py").write_text("")
    (tmp_path / "setup.py").write_text("")
    completer = PathCompleter(tmp_path)

    def complete(text: str) -> list[str]:
        document = Document(text, len(text))
        return [c.text for c in completer.get_completions(document, CompleteEvent())]

    assert complete("look at @s") == ["src/", "setup.py"]
    assert complete("look at @src/ap") == ["src/api.py", "src/app.py"]
    assert complete("no at sign here") == []
    assert complete("mail@s") == []


def test_add_dir_roots_complete_and_attach_under_their_folder_names(tmp_path: Path) -> None:
    from tiller.workspace.roots import WorkspaceRoots

    ws, api = tmp_path / "ws", tmp_path / "api"
    (ws / "src").mkdir(parents=True)
    (api / "lib").mkdir(parents=True)
    (api / "lib" / "server.py").write_text("PORT = 1\n")
    completer = PathCompleter(ws, (api,))

    def complete(text: str) -> list[str]:
        document = Document(text, len(text))
        return [c.text for c in completer.get_completions(document, CompleteEvent())]

    assert complete("see @a") == ["api/"]
    assert complete("see @api/lib/s") == ["api/lib/server.py"]
    params = prompt_params("see @api/lib/server.py", WorkspaceRoots.of(ws, api))
    assert params["attachments"] == [
        {"kind": "file", "name": "api/lib/server.py", "path": "api/lib/server.py"}
    ]
