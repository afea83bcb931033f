"""A stdlib-only MCP server over stdio for bench/mcp_prefix.py: ``python _mcp_tools_server.py
NAME COUNT`` lists COUNT tools shaped like a real server's (a sentence of description, three or
four documented arguments) and answers every call with a line of text."""

from __future__ import annotations

import json
import sys

VERBS = ("list", "get", "create", "update", "delete", "search", "sync", "archive", "link", "tag")


def tools(name: str, count: int) -> list[dict[str, object]]:
    made: list[dict[str, object]] = []
    for i in range(count):
        verb = VERBS[i % len(VERBS)]
        made.append({
            "name": f"{verb}_{name}_item_{i}",
            "description": f"{verb.capitalize()} {name} items in the current project. Returns "
                           "the matching items with their ids, titles, owners and timestamps.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "project": {"type": "string", "description": "Project key, e.g. ACME"},
                    "query": {"type": "string", "description": "Free-text filter"},
                    "limit": {"type": "integer", "description": "At most this many (1-100)"},
                    "cursor": {"type": "string", "description": "From a previous page"},
                },
                "required": ["project"],
            },
        })  # fmt: skip
    return made


def main(name: str, count: int) -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        result: object = {}
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": name, "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": tools(name, count)}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}]}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
