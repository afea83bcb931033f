"""What the terminal clients print for interrupted commands, retries and modes (pure parts)."""

from __future__ import annotations

from tiller.faces.common.render import RetryNotices, finished_line, mode_words, tool_output


def test_an_empty_partial_output_header_is_never_shown() -> None:
    blank = {
        "status": "interrupted",
        "output": "Interrupted by user (partial output before the interrupt):\n \n",
    }
    assert tool_output(blank) == "Interrupted by user"
    assert finished_line("bash sleep 9", blank) == "✗ bash sleep 9: Interrupted by user"
    kept = {"output": "Interrupted by user (partial output before the interrupt):\nstep 1\n"}
    assert tool_output(kept) == kept["output"]


STEP = "The model API failed during the response (connection): retrying this step in"


def test_retry_notices_show_once_per_kind_and_turn() -> None:
    notices = RetryNotices()
    shown = [
        text
        for text in (
            "Model API busy or unreachable: retrying in 0.4 s",
            "Model API busy or unreachable: retrying in 0.9 s",
            f"{STEP} 1 s (1/2)",
            f"{STEP} 2 s (2/2)",
            "Mode: plan",
            "Mode: plan",
        )
        if notices.first(text)
    ]
    assert shown == [
        "Model API busy or unreachable: retrying in 0.4 s",
        f"{STEP} 1 s (1/2)",
        "Mode: plan",
        "Mode: plan",
    ]
    notices.turn_over()
    assert notices.first("Model API busy or unreachable: retrying in 0.4 s")


def test_modes_read_as_words_everywhere() -> None:
    assert [mode_words(m) for m in ("default", "acceptEdits", "plan")] == [
        "ask before edits",
        "accept edits",
        "plan",
    ]
    assert mode_words(None) == "?"
