"""``test -v NAME`` and ``printf -v NAME``: bash evaluates an array subscript in the name as
arithmetic, command substitutions included, whatever the quotes: never read-only. Checked
against real bash: the substitution runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tiller.workspace.bash.readonly import is_read_only_command


@pytest.mark.parametrize(
    "command",
    [
        "test -v 'a[$(touch ran)]'",
        "[ -v 'a[$(touch ran)]' ]",
        "[ -n x -a -v 'a[`touch ran`]' ]",
        "printf -v 'a[$(touch ran)]' x",
    ],
)
def test_a_variable_name_with_a_subscript_is_never_read_only(command: str, tmp_path: Path) -> None:
    assert not is_read_only_command(command, tmp_path)
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=False, capture_output=True)
    assert (tmp_path / "ran").exists()  # bash does run it: the refusal is needed


@pytest.mark.parametrize("command", ["test -f a.txt", "[ -n x ]", "printf '%s\\n' x"])
def test_plain_tests_and_prints_stay_read_only(command: str, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    assert is_read_only_command(command, tmp_path)
