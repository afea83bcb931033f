"""The mutation run's own pieces (tests/mutation, scripts/mutation.sh): which tests a mutant
runs, which mutants are equivalent by construction, and how a session's dump is counted."""

from __future__ import annotations

import json
from pathlib import Path

from mutation import run_mutant, sessions

MODULE = """from __future__ import annotations

LIMIT = 3


def f(x: int | None) -> int:
    if x is None:
        return LIMIT
    return x + 1


class C:
    size: int = 2

    def g(self) -> int:
        return self.size
"""


def test_a_mutant_runs_the_tests_that_executed_its_statement() -> None:
    mutated = MODULE.replace("return x + 1", "return x - 1")
    lines = run_mutant.changed_lines(MODULE, mutated)
    assert lines == {9}
    spans, at_import = run_mutant.affected(MODULE, lines)
    assert (spans, at_import) == ({9}, False)
    line_map = {"": [1, 3, 6, 12, 13, 15], "t::one": [7, 8], "t::two": [7, 9], "t::three": [16]}
    assert run_mutant.select(line_map, spans, at_import, ["t"]) == ["t::two"]


def test_a_mutant_of_what_runs_at_import_runs_every_test_file() -> None:
    for before, after in [
        ("LIMIT = 3", "LIMIT = 4"),  # module level
        ("size: int = 2", "size: int = 3"),  # class level
        ("def g(self) -> int:", "def g(self, y: int = 0) -> int:"),  # a def line
    ]:
        lines = run_mutant.changed_lines(MODULE, MODULE.replace(before, after))
        assert run_mutant.affected(MODULE, lines)[1], before
    assert run_mutant.select({"t::one": [7]}, {3}, True, ["a.py", "b.py"]) == ["a.py", "b.py"]
    assert run_mutant.select({"": [3], "t::one": [7]}, {3}, False, ["a.py"]) == ["a.py"]


def test_only_annotations_changed_is_equivalent_where_annotations_are_postponed() -> None:
    annotation = MODULE.replace("int | None", "int & None")
    assert run_mutant.annotations_only(MODULE, annotation)
    assert run_mutant.annotations_only(MODULE, MODULE.replace("size: int", "size: str"))
    assert not run_mutant.annotations_only(MODULE, MODULE.replace("x + 1", "x - 1"))
    evaluated = MODULE.removeprefix("from __future__ import annotations\n")
    assert not run_mutant.annotations_only(evaluated, evaluated.replace("int | None", "int"))


def _item(line: int, operator: str, result: dict[str, object] | None) -> str:
    mutation = {
        "module_path": "server/tiller/m.py",
        "operator_name": f"core/{operator}",
        "occurrence": 0,
        "start_pos": [line, 4],
        "end_pos": [line, 5],
        "operator_args": {},
        "definition_name": "f",
    }
    return json.dumps([{"job_id": str(line), "mutations": [mutation]}, result])


def _ran(outcome: str, output: str, diff: str = "") -> dict[str, object]:
    return {"worker_outcome": "normal", "test_outcome": outcome, "output": output, "diff": diff}


DIFF = "\n".join(
    [
        *("--- mutation diff ---", "--- a/m.py", "+++ b/m.py", "@@ -7,4 +7,3 @@"),
        *("     if x is None:", "         return LIMIT", "-", "-    return x + 1"),
        *("+    return x - 1", " "),
    ]
)


def test_a_sessions_dump_is_counted_by_outcome() -> None:
    dump = [
        _item(1, "AddNot", _ran("killed", "1 failed")),
        _item(2, "AddNot", _ran("killed", "timeout")),
        _item(3, "AddNot", _ran("killed", "E   Failed: Timeout >60.0s")),
        _item(9, "ReplaceBinaryOperator_Add_Sub", _ran("survived", "5 passed", DIFF)),
        _item(10, "AddNot", _ran("survived", "no test executes line 10 of m.py", DIFF)),
        _item(11, "AddNot", _ran("survived", "MUTATION-ANNOTATION-ONLY: ...")),
        _item(12, "AddNot", _ran("survived", "MUTATION-NOT-PYTHON: invalid syntax")),
        _item(13, "AddNot", _ran("survived", "MUTATION-RUNNER-ERROR: pytest exited 4")),
        _item(14, "AddNot", {"worker_outcome": "skipped", "output": "Filtered operator"}),
        _item(15, "ExceptionReplacer", {"worker_outcome": "exception", "output": "Traceback"}),
        _item(16, "AddNot", None),
    ]
    mutants = sessions.read_dump(dump)
    assert [m.outcome for m in mutants] == [
        *("killed", "timed out", "timed out", "survived", "survived", "survived"),
        *("invalid", "error", "invalid", "pending"),
    ]
    survivor = mutants[3]
    assert (survivor.module, survivor.operator, survivor.line) == (
        "m.py",
        "ReplaceBinaryOperator_Add_Sub",
        9,
    )
    assert (survivor.original, survivor.mutated) == ("return x + 1", "return x - 1")
    assert mutants[4].untested and mutants[5].annotation_only

    assert survivor.after == "return LIMIT"  # blank lines are no part of the change
    reviewed = sessions.Equivalent(
        "m.py",
        "ReplaceBinaryOperator_Add_Sub",
        "f",
        "return x + 1",
        "return x - 1",
        "return LIMIT",
        "why",
    )
    elsewhere = sessions.Equivalent(
        "m.py", "ReplaceBinaryOperator_Add_Sub", "f", "return x + 1", "return x - 1", "y = 2", "why"
    )
    assert not elsewhere.matches(survivor)  # the same change after another line
    tally = sessions.tally("m", mutants, [reviewed])
    figures = (tally.mutants, tally.killed, tally.timed_out, tally.survived, tally.equivalent)
    assert figures == (8, 1, 2, 3, 2)
    assert (tally.errors, tally.pending, tally.invalid) == (1, 1, 2)
    assert [m.line for m in tally.survivors] == [10]
    assert tally.share == "3/6 = 50.0 %"


def test_reviewed_equivalents_are_read_with_every_field(tmp_path: Path) -> None:
    path = tmp_path / "equivalent.toml"
    path.write_text(
        "[[equivalent]]\nmodule = 'm.py'\noperator = 'AddNot'\nin = 'f'\nafter = 'def f(x):'\n"
        "line = ' if x: '\nmutant = 'if not x:'\nreason = 'why'\n"
    )
    (entry,) = sessions.read_equivalents(path)
    assert (entry.original, entry.mutated, entry.after) == ("if x:", "if not x:", "def f(x):")
    path.write_text("[[equivalent]]\nmodule = 'm.py'\n")
    try:
        sessions.read_equivalents(path)
    except SystemExit as stop:
        assert "lacks 'operator'" in str(stop)
    else:
        raise AssertionError("an entry without its fields was accepted")


def test_the_session_config_is_the_template_with_the_module_and_its_command() -> None:
    template = (Path(sessions.__file__).parent / "cosmic-ray.toml").read_text()
    config = sessions.session_config(template, "server/tiller/m.py", "python run.py a,b -- -x", 90)
    assert "module-path = 'server/tiller/m.py'" in config
    assert "test-command = 'python run.py a,b -- -x'" in config
    assert "timeout = 90.0" in config
    assert "exclude-operators" in config
