"""One turn of a session: its setup (``setup``, ``start``), the loop that streams a response and
runs its tool calls (``loop``, ``step``, ``step_stream``, ``step_tools``, ``scheduler``), the
plan gate, the checkpoints around it, the events it emits and how it ends (``events``,
``outcomes``), and what the model is told with it (``system_prompt``, ``roots_prompt``,
``nested_instructions``, ``attachments``, ``compaction``)."""
