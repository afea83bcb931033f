"""tiller chat: `/rewind` shows what it would do and asks first; the lines it shows (pure)."""

from __future__ import annotations

from tiller.faces.chat.rewind import (
    AskedRewind,
    asked_rewind,
    preview_lines,
    rewind_question,
    target_index,
)

ROWS = [
    {"turnId": "turn_1", "prompt": "make the file"},
    {"turnId": "turn_2", "prompt": "now delete the other one\nand more"},
    {"turnId": "turn_3", "prompt": "rename it"},
]


def test_a_rewind_to_confirm_is_told_from_a_dry_run_and_a_usage_error() -> None:
    assert asked_rewind("/rewind") == AskedRewind("/rewind", None)
    assert asked_rewind("  /REWIND turn_2 ") == AskedRewind("/REWIND turn_2", "turn_2")
    for line in ("/rewind --dry-run", "/rewind --dry-run turn_2", "/rewind a b", "/rewind -x"):
        assert asked_rewind(line) is None, line
    assert asked_rewind("/rewinds") is None
    assert asked_rewind("please /rewind") is None


def test_the_target_is_the_last_turn_or_the_one_named() -> None:
    assert target_index(ROWS, None) == 2
    assert target_index(ROWS, "turn_2") == 1
    assert target_index(ROWS, "turn_9") is None
    assert target_index([], None) is None


def test_the_preview_names_files_by_effect_the_dropped_turns_and_others_changes() -> None:
    effects = {
        "reverted": ["app.py"],
        "deleted": ["a.txt", "b.txt"],
        "restored": [],
        "userChanged": ["notes.md"],
    }
    assert preview_lines(ROWS[1:], effects) == [
        "Rewinding to before turn_2 (“now delete the other one and more”) would:",
        "  revert 1 file: app.py",
        "  delete 2 files: a.txt, b.txt",
        "  drop 2 turns from the conversation: “now delete the other one and more”, “rename it”",
        "  and put back what was changed since by someone other than the agent: notes.md",
    ]


def test_a_preview_without_file_changes_says_so_and_long_lists_are_cut() -> None:
    many = [{"turnId": f"turn_{n}", "prompt": f"step {n}"} for n in range(8)]
    lines = preview_lines(many, {"deleted": [f"f{n}" for n in range(12)]})
    assert lines[1] == "  delete 12 files: f0, f1, f2, f3, f4, f5, f6, f7, f8, f9 and 2 more"
    assert lines[2].endswith("“step 4” and 3 more")
    assert preview_lines(many[-1:], {})[1:] == [
        "  change no file",
        "  drop 1 turn from the conversation: “step 7”",
    ]


def test_the_question_says_yes_to_rewind_and_no_keeps_everything() -> None:
    question = rewind_question("turn_2")
    assert question.title == "Rewind to before turn_2? (/undo undoes it)"
    yes, no = question.from_line("y"), question.from_line("no")
    assert yes is not None and yes.choice.answered() == {"rewind": True}
    assert no is not None and no.choice.answered() == {"rewind": False}
