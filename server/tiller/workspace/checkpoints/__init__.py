"""Checkpoints: the workspace snapshotted around every turn into shadow git repositories,
and the rewind that puts files back (``rewind``, the async face over ``shadow_repo``; one
repository per root in ``roots``; ``git``, ``objects``, ``scan``, ``watch`` and ``writer`` its
parts)."""
