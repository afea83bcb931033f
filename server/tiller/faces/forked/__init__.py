"""forked."""
