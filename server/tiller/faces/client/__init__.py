"""What the terminal clients share: the JSON-RPC connection over stdio, the server process,
the text of the tool log, the questions and options, and the headless client itself
(``headless``: ``tiller run``, and ``tiller chat`` on a pipe; ``plain``: its rendering;
``report``: ``--output-format json|stream-json``; ``limits``: ``--max-turns``).

Light on purpose: no pygls, no lsprotocol, no SDK, no prompt_toolkit on this import path
(client start-up speed).
"""
