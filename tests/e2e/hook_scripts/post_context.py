"""A PostToolUse hook in Claude Code's format: after a Write, tell the model to run the
formatter (additionalContext)."""

import json
import sys

data = json.load(sys.stdin)
path = data["tool_response"].get("filePath") or data["tool_input"].get("file_path")
print(
    json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PostToolUse",
                "additionalContext": f"{path} was written; run the formatter before finishing.",
            }
        }
    )
)
