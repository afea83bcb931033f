"""The faces: the Tiller protocol over stdio (``lsp``), the Agent Client Protocol (``acp``),
and the terminal clients (``cli`` entry point, ``client`` for ``tiller run``, ``chat``). A face
turns requests into calls on ``Sessions`` and renders events; nothing below it knows a wire."""
