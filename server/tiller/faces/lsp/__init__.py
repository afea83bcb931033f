"""The Tiller protocol face: JSON-RPC over stdio (our framing, message checks), pygls, the
handler table with typed params."""
