"""Reading a bash command line without running it: the simple commands bash would run
(``segments``, on tree-sitter-bash: ``words``, ``word_nodes``, ``readings``, ``redirections``,
``code_strings``, ``hidden_code``), and the proof that a line only reads (``readonly``, with
``git_config`` for what a repository's configuration could make git run)."""
