#!/bin/bash
# A UserPromptSubmit hook in Claude Code's format: exit 2 blocks a prompt that names a
# secret (stderr is the reason); plain stdout on exit 0 is context for the model.
prompt=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["prompt"])')
case "$prompt" in
  *password*) echo "prompts must not contain passwords" >&2; exit 2 ;;
esac
echo "The current sprint is sprint-42."
