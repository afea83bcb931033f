"""What the faces share: the LSP framing of JSON-RPC for the server and its clients
(``framing``), the JSON-RPC wire checks (``wire``), and the words every face draws events with
(``render``: a tool's summary, a hook's line; ``children``: a subagent's rows)."""
