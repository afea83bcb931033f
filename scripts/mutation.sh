#!/usr/bin/env bash
# Mutation run (cosmic-ray) of the modules that decide what runs unasked: every small change
# to their code (a condition negated, a number off by one, == as !=, ...) must make one of
# their unit tests fail. Not part of scripts/test.sh: it runs tests once per mutant (10 to 40
# minutes a module on 2 shared cores).
#
#   scripts/mutation.sh [all]                every module below
#   scripts/mutation.sh bash_readonly ...    those modules
#   scripts/mutation.sh --report [NAME...]   the last run's report again, nothing run
#   scripts/mutation.sh --resume NAME...     finish an interrupted run of those modules
#   scripts/mutation.sh --at REV [NAME...]   the modules and tests of a commit (a "before")
#
# Each module's session runs in a copy of server/, tests/ and pyproject.toml under
# .mutation/NAME/ (git-ignored), never in the checkout: cosmic-ray writes each mutant into the
# file, and others may be running tests here meanwhile. The tests run once on the unmutated
# code, recording which test executes which line (tests/mutation/line_map.py); each mutant
# then runs only the tests that execute its statement, or all the module's tests when the
# statement runs at import (tests/mutation/run_mutant.py). The report gives per module the
# mutants, killed, timed out, survived, the survivors reviewed as equivalent (each with its
# reason in tests/mutation/equivalent.toml) and the share of the other mutants killed, then
# lists every other survivor: kill it with a test named after the behaviour, or, when no test
# could tell it from the real code, add it to the equivalents with the reason. Exit status 1
# while any non-equivalent mutant survives (or did not run).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUN=$ROOT/.mutation
HERE=$ROOT/tests/mutation

# One line per module: its name, its path under server/tiller/, and the unit test files that
# cover it (fast and targeted: no end-to-end tests, no property tests).
MODULES="
bash_readonly     workspace/bash/readonly.py   tests/unit/test_bash_readonly.py tests/unit/test_shell_rule_readings.py
git_config        workspace/bash/git_config.py      tests/unit/test_git_config.py tests/unit/test_bash_readonly.py
confined          workspace/confined.py        tests/unit/test_confinement.py tests/unit/test_tools_files.py tests/unit/test_tools_search.py tests/unit/test_workspace_roots.py tests/unit/test_confined_material.py
bash_segments     workspace/bash/segments.py   tests/unit/test_bash_segments.py tests/unit/test_shell_rule_readings.py tests/unit/test_rules_corpus.py
permission_rules  core/permissions/rules.py           tests/unit/test_permission_rules.py tests/unit/test_rule_vocabulary.py tests/unit/test_rules_corpus.py tests/unit/test_shell_rule_readings.py
call_rules        core/permissions/call_rules.py     tests/unit/test_call_rules.py tests/unit/test_shell_rule_readings.py tests/unit/test_rule_vocabulary.py tests/unit/test_permission_rules.py tests/unit/test_rules_corpus.py
trust             extend/trust.py                    tests/unit/test_trust.py tests/unit/test_settings_layer.py
settings_layer    extend/settings_layer.py           tests/unit/test_settings_layer.py tests/unit/test_trust.py
settings_schema   extend/settings_schema.py          tests/unit/test_settings_layer.py tests/unit/test_hooks_format.py tests/unit/test_mcp_config.py tests/unit/test_language_servers_config.py
rule_files        core/permissions/rule_files.py     tests/unit/test_permission_rules.py tests/unit/test_settings_layer.py tests/unit/test_workspace_roots.py
"

# pytest as fast as it starts: no plugin the unit tests above do not need (hypothesis' and
# pytest-lsp's imports alone cost ~2.5 s a run), no cache, no xdist, first failure ends it, a
# test that hangs fails after a minute.
PYTEST_ARGS="-x -q --timeout=60 -p no:cacheprovider -p no:hypothesispytest -p no:pytest-lsp -p no:xdist -p no:xdist.looponfail -p no:anyio -p no:platformdirs"

names() { echo "$MODULES" | awk 'NF { print $1 }'; }
module_line() { echo "$MODULES" | awk -v n="$1" '$1 == n'; }

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
  echo "Modules: $(names | tr '\n' ' ')"
  exit 2
}

MODE=run
AT=
case "${1:-}" in
  -h | --help) usage ;;
  --report) MODE=report; shift ;;
  --resume) MODE=resume; shift ;;
  --at) AT=$(git rev-parse --verify "${2:?--at needs a revision}^{commit}"); shift 2 ;;
esac
SELECTED=()
if [ "$#" -eq 0 ] || [ "$*" = all ]; then
  mapfile -t SELECTED < <(names)
else
  for name in "$@"; do
    [ -n "$(module_line "$name")" ] || { echo "unknown module: $name"; usage; }
    SELECTED+=("$name")
  done
fi

# cosmic-ray is in the `mutation` dependency group: the normal setup does not install it, and
# a `uv sync` meanwhile (another command in this checkout) removes it; `uv run` puts it back.
PYTHON=$(uv run --frozen --group mutation python -c 'import sys; print(sys.executable)')
cosmic_ray() {  # cosmic_ray [cosmic-ray | cr-TOOL] ARGS...
  case "$1" in
    cr-*) uv run --project "$ROOT" --frozen --group mutation --quiet "$@" ;;
    *) uv run --project "$ROOT" --frozen --group mutation --quiet cosmic-ray "$@" ;;
  esac
}

report() {
  local sessions=() name
  for name in "${SELECTED[@]}"; do
    if [ -f "$RUN/$name/session.sqlite" ]; then
      cosmic_ray dump "$RUN/$name/session.sqlite" >"$RUN/$name/dump.jsonl"
      sessions+=("$name=$RUN/$name/dump.jsonl")
    else
      echo "$name: no session in $RUN/$name (run it first)"
    fi
  done
  [ "${#sessions[@]}" -gt 0 ] || exit 2
  echo "== mutation run (what each session mutated, and when):"
  for name in "${SELECTED[@]}"; do
    [ ! -f "$RUN/$name/source" ] || echo "   $name: $(cat "$RUN/$name/source")"
  done
  "$PYTHON" "$HERE/sessions.py" report "$HERE/equivalent.toml" "${sessions[@]}"
}

if [ "$MODE" = report ]; then
  report
  exit $?
fi

# The tests' temporary files (pytest's basetemp, the workspaces they make) go to a folder of
# this run, removed when it ends, whatever the way.
SCRATCH=$(mktemp -d)
RUNNING=()  # background processes to stop if the run is interrupted
kill_tree() {  # kill_tree PID: the process and its descendants (a test run is in a session
  local child  # of its own, so not in our process group)
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill -KILL "$1" 2>/dev/null || true
}
stop() {
  local pid
  for pid in "${RUNNING[@]}"; do kill_tree "$pid"; done
  rm -rf "$SCRATCH"
}
trap stop EXIT
trap 'exit 130' INT TERM
export TMPDIR=$SCRATCH

copy_tree() {  # copy_tree DIR: the sources and tests, as they are in the checkout (or at $AT)
  mkdir -p "$1"
  if [ -n "$AT" ]; then
    git archive "$AT" server tests pyproject.toml | tar -C "$1" -xf -
  else
    tar -C "$ROOT" --exclude=__pycache__ --exclude=node_modules --exclude=.mypy_cache \
      -cf - server tests pyproject.toml | tar -C "$1" -xf -
  fi
}

progress() {  # progress SESSION SKIPPED TOTAL: how far the session is, each minute
  local listing done
  while sleep 60; do
    listing=$(cosmic_ray dump "$1" 2>/dev/null) || continue  # busy: next minute
    done=$(grep -cv ', null]$' <<<"$listing") || true
    echo "   $(date '+%H:%M:%S') $((done - $2)) of $3 mutants run"
  done
}

run_module() {  # run_module NAME: a fresh session (or the unfinished one with --resume)
  local name=$1 path tests dir tree tools module command started seconds timeout total todo
  local present=() file
  read -r _ path tests < <(module_line "$name")
  dir=$RUN/$name
  tree=$dir/tree
  tools=$dir/tools  # this folder's scripts as they were when the session began
  module=server/tiller/$path
  echo "== $name: $module${AT:+ at $AT} against $tests"
  if [ "$MODE" = resume ]; then
    [ -f "$dir/session.sqlite" ] || { echo "$name: nothing to resume"; return 1; }
  else
    rm -rf "$dir"
    copy_tree "$tree"
    cp -R "$HERE" "$tools"
    if [ -n "$AT" ]; then
      echo "commit ${AT:0:10}, $(date -u '+%Y-%m-%d %H:%M') UTC" >"$dir/source"
    else
      echo "the working tree on $(git rev-parse --short=10 HEAD), $(date -u '+%Y-%m-%d %H:%M') UTC" >"$dir/source"
    fi
  fi
  [ -f "$tree/$module" ] || { echo "$name: no $module"; return 1; }
  for file in $tests; do  # a test file the tree does not have yet (an older revision)
    if [ -e "$tree/$file" ]; then present+=("$file"); else echo "   (no $file here)"; fi
  done
  tests=${present[*]}
  cd "$tree"
  # The copy's tiller before the checkout's editable install; the tools for line_map.
  export PYTHONPATH=$tree/server:$tools
  if [ "$("$PYTHON" -c 'import tiller; print(tiller.__file__)')" != "$tree/server/tiller/__init__.py" ]; then
    echo "$name: the tests would import tiller from outside the copy; stopped"
    return 1
  fi
  started=$SECONDS
  # The tests once on the unmutated code, recording which test executes which line.
  # shellcheck disable=SC2086  # options and files are words
  if ! MUTATION_TARGET=$tree/$module MUTATION_LINE_MAP=$dir/lines.json PYTHONDONTWRITEBYTECODE=1 \
    "$PYTHON" -m pytest $PYTEST_ARGS -p line_map $tests >"$dir/baseline.txt" 2>&1; then
    echo "$name: the tests fail without any mutant (last lines of $dir/baseline.txt):"
    tail -n 15 "$dir/baseline.txt"
    return 1
  fi
  seconds=$((SECONDS - started))
  timeout=$((60 + 3 * seconds))  # a mutant that makes the tests hang is caught by this
  echo "   the tests pass on the unmutated code in ${seconds} s (traced); timeout per mutant ${timeout} s"
  if [ "$MODE" != resume ]; then
    cp "$tree/$module" "$dir/pristine.py"
    # cosmic-ray splits the command into words (shlex): no spaces in these paths.
    command="$PYTHON $tools/run_mutant.py $module $dir/pristine.py $dir/lines.json"
    "$PYTHON" "$tools/sessions.py" config "$tools/cosmic-ray.toml" "$module" "$timeout" \
      "$command ${tests// /,} -- $PYTEST_ARGS" >"$dir/config.toml" || return 1
    cosmic_ray init "$dir/config.toml" "$dir/session.sqlite" || return 1
    cosmic_ray cr-filter-operators "$dir/session.sqlite" "$dir/config.toml" || return 1
  fi
  total=$(cosmic_ray dump "$dir/session.sqlite" | wc -l)
  todo=$(cosmic_ray dump "$dir/session.sqlite" | grep -c ', null]$') || true
  echo "   $todo mutants to run"
  progress "$dir/session.sqlite" "$((total - todo))" "$todo" &
  RUNNING+=($!)
  cosmic_ray exec "$dir/config.toml" "$dir/session.sqlite" &
  RUNNING+=($!)
  started=$SECONDS
  wait "${RUNNING[-1]}" || true
  kill_tree "${RUNNING[-2]}"
  wait "${RUNNING[-2]}" 2>/dev/null || true  # quietly: no "Killed" notice
  RUNNING=()
  echo "   done in $(((SECONDS - started + 59) / 60)) min"
}

FAILED=()
for name in "${SELECTED[@]}"; do
  run_module "$name" || FAILED+=("$name")
  cd "$ROOT"
done
status=0
report || status=$?
if [ "${#FAILED[@]}" -gt 0 ]; then
  echo "== not run: ${FAILED[*]}"
  status=2
fi
exit "$status"
