"""What the warm template accepts as a fork request (``tiller.warm.template.ForkRequest``):
a server (``[]`` or ``["--acp"]``), or ``tiller run ...`` with how its standard streams are
made; anything else is refused with a message naming what is wrong, before any fork."""

from __future__ import annotations

from typing import Any

import pytest

from tiller.faces.forked.place import WarmError
from tiller.warm.template import ForkRequest

STREAMS = [["utf-8", "strict", False, True], ["utf-8", "strict", True, True], ["utf-8", "backslashreplace", True, True]]  # fmt: skip  # noqa: E501


def request(**fields: Any) -> dict[str, Any]:
    return {"fork": True, "args": [], "env": {"HOME": "/h"}, "cwd": "/", "umask": 0o22, **fields}


def test_a_server_request_takes_no_streams() -> None:
    parsed = ForkRequest.parse(request(args=["--acp"], streams=STREAMS))
    assert parsed.args == ("--acp",) and parsed.streams == ()


def test_a_run_request_keeps_its_arguments_streams_and_job() -> None:
    parsed = ForkRequest.parse(request(args=["run", "--yes", "héllo"], streams=STREAMS, group=4242))
    assert parsed.args == ("run", "--yes", "héllo")
    assert parsed.streams[2] == ("utf-8", "backslashreplace", True, True)
    assert parsed.group == 4242  # the terminal is read for that job (``read_for_job``)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"args": ["--warm"]}, "args: expected [], ['--acp'] or ['run', ...]"),
        ({"args": ["chat"]}, "args: expected [], ['--acp'] or ['run', ...]"),
        ({"args": ["run", 3]}, "args: expected [], ['--acp'] or ['run', ...]"),
        ({"args": ["run"]}, "streams: expected three (stdin, stdout, stderr)"),
        ({"args": ["run"], "streams": STREAMS[:2]}, "streams: expected three"),
        (
            {"args": ["run"], "streams": [*STREAMS[:2], ["utf-8", "strict", 1, True]]},
            "streams: expected [encoding, errors, bool, bool]",
        ),
        (
            {"args": ["run"], "streams": [*STREAMS[:2], ["no-such-codec", "strict", True, True]]},
            "streams: unknown encoding: no-such-codec",
        ),
        (
            {"args": ["run"], "streams": [*STREAMS[:2], ["utf-8", "no-such-handler", True, True]]},
            "streams: unknown error handler name 'no-such-handler'",
        ),
        ({"args": ["run"], "streams": STREAMS, "group": "1"}, "group: expected a process group"),
        ({"args": ["run"], "streams": STREAMS, "group": 0}, "group: expected a process group"),
    ],
)
def test_a_bad_request_is_refused_naming_what_is_wrong(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(WarmError) as refused:
        ForkRequest.parse(request(**fields))
    assert message in str(refused.value)
