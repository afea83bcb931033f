"""A guard for ``--dist loadgroup`` (scripts/test.sh): a module marked ``xdist_group`` runs on
one pytest-xdist worker, so its module-scoped fixture (a template of its own, a sample) is made
once instead of once per worker.

pytest-xdist groups by a suffix (``@group``) that each worker writes into the marked tests'
ids. pytest 9.2 keeps a test's id in a structured field that the write no longer reaches
(pytest-xdist#1386), and the groups are spread over the workers without a word: every worker
then made those fixtures again (~25 s of CPU a run). pyproject.toml pins pytest 9.1.1 for
that; this check fails each marked test should an upgrade bring the silent spread back."""

from __future__ import annotations

import pytest


def pytest_runtest_setup(item: pytest.Item) -> None:
    """On a worker of a ``--dist loadgroup`` run, a test marked ``xdist_group`` carries its
    group in its id, or it fails saying why (an error raised at collection on a worker reaches
    the run only as a crash, without its words)."""
    if not getattr(item.config.option, "loadgroup", False):
        return  # not a loadgroup worker: nothing groups here
    if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid:
        pytest.fail(
            "--dist loadgroup did not group this test marked xdist_group: this pytest and "
            "pytest-xdist do not work together (pytest-xdist#1386); see tests/xdist_groups.py",
            pytrace=False,
        )
