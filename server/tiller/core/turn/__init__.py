"""One turn of a session: its setup (``setup``; the session builds it in
``core/session/turn_start.py``), the loop that streams a response and runs its tool calls
(``loop``, ``step``, ``step_stream``, ``step_tools``, ``scheduler``), the permission step
(``permit``) and the record of each call (``call_record``), the turn's hooks (``turn_hooks``,
``tool_hooks``, ``hook_acts``), the plan gate, the checkpoints around it, the events it emits
and how it ends (``events``, ``outcomes``), and what the model is told with it
(``system_prompt``, ``roots_prompt``, ``nested_instructions``, ``attachments``, ``compaction``)."""
