"""A Stop hook in Claude Code's format: the first time, block the stop with a reason; when
stop_hook_active is true, let the turn end."""

import json
import sys

data = json.load(sys.stdin)
if not data["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "run the tests before you stop"}))
