"""Tiller: a coding agent whose runtime is a pygls JSON-RPC server."""

__version__ = "0.1.0"
