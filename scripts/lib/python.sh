# The interpreter Tiller's environments are made with. Sourced, not run.
#
# Debian's own /usr/bin/python3 when it is 3.11 or newer (requires-python), else nothing (the
# caller lets uv find one). Debian builds it with PGO and LTO; a Python built from source
# without them (pyenv's default, first on PATH on some machines) takes ~25% more CPU for the
# same work: a warm template's start 3.5 -> 2.7 s of CPU, `import anthropic` 1.8 -> 1.5 s
# (bench/README.md, session 34).
system_python() {
  if /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo /usr/bin/python3
  fi
}
