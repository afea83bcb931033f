"""A process's fields in ``/proc/PID/stat`` (Linux), after its command name.

The command name comes in parentheses and may hold spaces and parentheses itself, so the
fields are what follows its last ``)``: state, ppid, pgrp, session, tty_nr, tpgid, … (proc(5)
numbers them from 3: ``fields[n - 3]`` is field n). Stdlib only and cheap to import.
"""

from __future__ import annotations

STATE, PPID, PGRP, SESSION, TTY_NR, TPGID = range(6)


def stat_fields(pid: int | str) -> list[bytes]:
    """The fields of ``pid`` (``"self"`` for this process); OSError when it is gone, IndexError
    when the file is not as proc(5) says."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    if len(fields) <= TPGID:
        raise IndexError(f"/proc/{pid}/stat has {len(fields)} fields after the name")
    return fields
