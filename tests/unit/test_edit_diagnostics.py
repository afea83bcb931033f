"""Which diagnostics an edit introduced, what the model is told, and malformed answers."""

from __future__ import annotations

from pathlib import Path

from tiller.core.turn.edit_diagnostics import MAX_REPORTED, introduced, report
from tiller.faces.lsp.diagnostics import parsed
from tiller.workspace.diagnostics import Diagnostic

WS = Path("/ws")


def error(line: int, message: str, path: str = "/ws/a.py") -> Diagnostic:
    return Diagnostic(path, line, 1, "error", message, "pyright")


def test_only_new_errors_count_whatever_line_they_moved_to() -> None:
    before = [
        error(3, "old problem"),
        error(9, "twice"),
        Diagnostic("/ws/a.py", 1, 1, "warning", "w"),
    ]
    after = [
        error(5, "old problem"),  # moved down by the edit: not new
        error(10, "twice"),
        error(11, "twice"),  # a second copy is new
        error(2, "new problem"),
        Diagnostic("/ws/a.py", 4, 1, "warning", "a new warning"),  # errors only
    ]
    assert introduced(before, after) == [error(11, "twice"), error(2, "new problem")]


def test_the_report_names_the_file_relative_and_caps_the_list() -> None:
    found = [error(n, f"problem {n}") for n in range(1, MAX_REPORTED + 4)]
    text = report(found, WS)
    assert text.startswith("\n\nThe edit introduced these errors")
    assert "- a.py:1:1: problem 1 [pyright]" in text
    assert f"problem {MAX_REPORTED + 1}" not in text
    assert text.endswith("- … 3 more")
    assert report([], WS) == ""


def test_a_malformed_answer_is_no_diagnostics_at_all() -> None:
    good = {"path": "/ws/a.py", "line": 1, "character": 2, "severity": "error", "message": "m"}
    assert parsed({"diagnostics": [good]}) == (Diagnostic("/ws/a.py", 1, 2, "error", "m"),)
    assert parsed({"diagnostics": []}) == ()
    assert parsed({"diagnostics": [{**good, "severity": "fatal"}]}) is None
    assert parsed({"diagnostics": [{**good, "line": "1"}]}) is None
    assert parsed({"diagnostics": "none"}) is None
    assert parsed(None) is None
