"""Whether a call may run: the mode's table (``modes``), the permission rules and their files
(``rules``, ``rule_files``), what they say of one call (``call_rules``: a command line per
segment), a custom command's ``allowed-tools`` (``command_grants``), the web tools shaped by the
rules (``web_fetch_rules``) and ``/permissions`` (``commands``)."""
