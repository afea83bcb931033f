"""A PreToolUse hook written to Claude Code's documented format: deny `rm` in Bash, rewrite
`echo original` into `echo rewritten`, allow a Write under notes/ without asking. It records
what it was given next to itself (hook-input-<event>.jsonl)."""

import json
import os
import sys

data = json.load(sys.stdin)
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, f"hook-input-{data['hook_event_name']}.jsonl"), "a") as log:
    log.write(json.dumps(data) + "\n")
tool_input = data.get("tool_input", {})
if data["tool_name"] == "Bash" and tool_input.get("command", "").startswith("rm "):
    print(
        json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "rm is not allowed in this project",
                }
            }
        )
    )
elif data["tool_name"] == "Bash" and tool_input.get("command") == "echo original":
    print(
        json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "updatedInput": {**tool_input, "command": "echo rewritten"},
                }
            }
        )
    )
elif data["tool_name"] == "Write" and "/notes/" in tool_input.get("file_path", ""):
    print(
        json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "permissionDecisionReason": "notes are free to write",
                }
            }
        )
    )
sys.exit(0)
