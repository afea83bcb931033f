"""A warm start for every client: a per-user template process forks servers.

Importing the server and the ``anthropic`` SDK costs a fresh Python process ~1.5 s of CPU.
The template (``template.py``, ``python -m tiller.warm.template DIR``) imports them once,
warms the read-only classifier, and then forks a fresh server for each client that connects
to its socket (``faces/forked/place.py``: owner-only, under the user's runtime dir). The client
(``faces/forked/client.py``) hands the template its own stdio descriptors (``SCM_RIGHTS``), so
the forked server talks to the client directly, with nothing relaying in between; its environment,
working directory and umask are the client's. ``tiller run``, ``tiller chat``, ``tiller acp``
and ``python -m tiller --warm`` (the VS Code extension) use it and fall back to a plain
spawn when it cannot be used. See docs/security.md ("The warm start") for why another user
cannot use the socket.

Stdlib only and cheap to import: a client pays for this before it has a server.
"""
