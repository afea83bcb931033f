"""Language servers Tiller runs itself: diagnostics after edits for the clients that do not
offer their editor's (``config.py``: what is configured; ``client.py``: one server;
``diagnostics.py``: the servers of a workspace as a source of diagnostics)."""
