#!/usr/bin/env bash
# Set up everything and run every test: lint, types, Python unit + end-to-end tests, and the
# VS Code extension's tests. Each phase prints its duration, and a summary of them all comes last.
#
# The extension's phase (npm ci, build, then code-server and Chromium) runs in the background
# from after the Python setup on, beside the node tools' and MCP servers' setup, ruff, mypy and
# pytest: it waits on the disk, the browser and the servers more than it computes. mypy runs
# beside pytest. The install check (code-server's native modules built in a fresh HOME) runs
# beside everything from after the system packages on. A phase in the background writes its
# output to a file, printed whole when it ends, so nothing interleaves. A failing phase does not
# stop the others: the run fails at the end, naming every phase that failed. A setup failing
# stops the run at once.
set -euo pipefail
cd "$(dirname "$0")/.."

TIMES=()
FAILED=()
SCRATCH=$(mktemp -d)
# CPU seconds (user + sys) of the processes this shell has waited for so far (the `times`
# builtin; redirected, not piped: a pipeline's subshell has children of its own). With the wall
# time it tells work from waiting, and what a phase costs the machine beside the others.
# Sets CPU_NOW (in this shell: `times` in a $(...) subshell would see that subshell's children).
CPU_NOW=0
cpu_now() {
  times >"$SCRATCH/times"
  CPU_NOW=$(cpu_of "$SCRATCH/times")
}
cpu_of() {  # the children's user + sys in a file `times` wrote, in whole seconds
  awk 'function s(t, p) { split(t, p, /[ms]/); return p[1] * 60 + p[2] } NR == 2 { printf "%.0f", s($1) + s($2) }' "$1"
}
CPU_TOTAL=0
remember() {  # remember NAME SECONDS CPU STATUS [NOTE]
  local mark=""
  CPU_TOTAL=$((CPU_TOTAL + $3))
  [ "$4" -eq 0 ] || { mark="  FAILED (exit $4)"; FAILED+=("$1"); }
  TIMES+=("$(printf '%-52s %5d s wall %5d s CPU%s%s' "$1" "$2" "$3" "${5:-}" "$mark")")
}
setup() {  # setup NAME COMMAND...: a phase the rest needs (stops the run when it fails)
  local name=$1 started=$SECONDS cpu
  shift
  echo "== $name"
  cpu_now
  cpu=$CPU_NOW
  "$@"
  cpu_now
  cpu=$((CPU_NOW - cpu))
  echo "== $name: $((SECONDS - started)) s (CPU ${cpu} s)"
  remember "$name" $((SECONDS - started)) "$cpu" 0
}
phase() {  # phase NAME COMMAND...: run it, print and remember how long it took and how it ended
  local name=$1 started=$SECONDS status=0 cpu
  shift
  echo "== $name"
  cpu_now
  cpu=$CPU_NOW
  "$@" || status=$?
  cpu_now
  cpu=$((CPU_NOW - cpu))
  echo "== $name: $((SECONDS - started)) s (CPU ${cpu} s)$([ "$status" -eq 0 ] || echo ", FAILED (exit $status)")"
  remember "$name" $((SECONDS - started)) "$cpu" "$status"
}

# Phases that run beside the others: each in a session of its own (so that an interrupted run
# can stop all of it), its output in a file, its duration, exit status and CPU time in three more.
BESIDE_NAMES=() BESIDE_PIDS=() BESIDE_DIRS=()
beside() {  # beside NAME COMMAND...: start it in the background
  local name=$1 dir
  shift
  dir=$(mktemp -d)
  echo "== $name: started beside the next phases (its output follows when it ends)"
  setsid bash -c 'started=$SECONDS; status=0; "$@" || status=$?; echo $((SECONDS - started)) >"$0/seconds"; echo "$status" >"$0/status"; times >"$0/times"' \
    "$dir" "$@" >"$dir/output" 2>&1 </dev/null &
  BESIDE_NAMES+=("$name") BESIDE_PIDS+=($!) BESIDE_DIRS+=("$dir")
}
join_beside() {  # wait for each in turn, print its output whole, remember its time
  local i name dir status seconds cpu waited
  for i in "${!BESIDE_PIDS[@]}"; do
    name=${BESIDE_NAMES[$i]} dir=${BESIDE_DIRS[$i]} waited=$SECONDS
    wait "${BESIDE_PIDS[$i]}" || true
    unset "BESIDE_PIDS[$i]"
    seconds=$(cat "$dir/seconds" 2>/dev/null || echo 0)
    status=$(cat "$dir/status" 2>/dev/null || echo 1)
    cpu=$(cpu_of "$dir/times" 2>/dev/null || echo 0)
    echo "== $name (ran beside the phases above; the run waited $((SECONDS - waited)) s more for it)"
    cat "$dir/output"
    echo "== $name: ${seconds} s (CPU ${cpu:-0} s)$([ "$status" -eq 0 ] || echo ", FAILED (exit $status)")"
    remember "$name" "$seconds" "${cpu:-0}" "$status" "  (in the background)"
  done
}
finish() {
  local i
  for i in "${!BESIDE_PIDS[@]}"; do  # interrupted, or a setup failed meanwhile: stop it, show what it said
    kill -TERM -- "-${BESIDE_PIDS[$i]}" 2>/dev/null || true
    wait "${BESIDE_PIDS[$i]}" 2>/dev/null || true
    echo "== ${BESIDE_NAMES[$i]}: stopped; its output so far:"
    cat "${BESIDE_DIRS[$i]}/output" 2>/dev/null || true
  done
  [ "${#BESIDE_DIRS[@]}" -eq 0 ] || rm -rf "${BESIDE_DIRS[@]}"
  echo "== phase times (total ${SECONDS} s wall, ${CPU_TOTAL} s CPU; the phases in the background overlapped those after their start)"
  printf '  %s\n' "${TIMES[@]}"
  rm -rf "$SCRATCH"
  echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min; $(nproc) cores)"
}
trap finish EXIT

# Phases of two checks: both run, and either failing fails the phase (set -e does not apply in a
# function called as `lint || ...`, and a phase in the background runs it in a bash of its own:
# hence the explicit statuses and the export).
lint() {
  local status=0
  uv run --frozen ruff check || status=1
  uv run --frozen ruff format --check || status=1
  # The layers, the faces' independence and no cycles (pyproject.toml [tool.importlinter]);
  # no cache: a stale one could pass a new import.
  uv run --frozen lint-imports --no-cache || status=1
  return "$status"
}
types() {
  local status=0
  # On CI (a fresh clone: no cache to reuse) mypy writes none: writing it is ~18% of the check.
  uv run --frozen mypy ${CI:+--cache-dir=/dev/null} || status=1
  uv run --frozen python -m tiller.protocol_ts --check vscode-extension/src/protocol.ts || status=1  # generated from protocol.py: no drift
  return "$status"
}
export -f lint types

setup "setup: system packages" scripts/setup-system.sh server code-server tests
# The install on a fresh account, which the per-user store hides from every run after the first
# (a fresh HOME, an empty npm cache, only the registries): code-server's native modules, built
# as its install builds them (vscode-extension/scripts/check-fresh-install.sh). It computes for
# ~100 s of CPU after a wait on the registry, beside everything that follows; 20 minutes at
# most, then it fails.
beside "install check: code-server's native modules, fresh HOME" \
  timeout --kill-after=10 1200 vscode-extension/scripts/check-fresh-install.sh
setup "setup: python" scripts/setup-python.sh
# From here on the extension needs nothing the other phases make (its e2e tests need .venv):
# its npm ci and build overlap the node tools' npm ci, which waits on the disk and network.
beside "VS Code extension: build, unit + end-to-end in code-server" vscode-extension/scripts/test.sh
setup "setup: node test tools" scripts/setup-node-tests.sh
setup "setup: MCP servers from PyPI" scripts/setup-mcp-py.sh
phase "ruff + import contracts" lint
# mypy reads the sources only: pytest need not wait for it.
beside "mypy (strict) + protocol.ts" types
# Each worker rewrites the test modules' asserts as it imports them (PYTHONDONTWRITEBYTECODE
# keeps none): ~5 s of CPU each. A collection run first to leave them in __pycache__ cost 19 s
# to save the two workers 10 s, so there is none.
# Two workers, one per core. Alone, at the same HEAD: -n 2 took 402 s of CPU in 247 s, -n 3
# 471 s in 251 s (a third collection and warm template, and three processes contending for two
# cores); here the extension's phase runs beside and takes what pytest leaves. --dist loadgroup:
# the tests are spread one by one, but a module marked xdist_group runs on one worker, so its
# module-scoped fixture (a template of its own, a sample) is made once, not once per worker
# (tests/xdist_groups.py checks that the groups hold).
phase "pytest" uv run --frozen pytest -q -p no:cacheprovider -n 2 --dist loadgroup --durations=10 "$@"  # the 10 slowest tests last
join_beside

if [ "${#FAILED[@]}" -gt 0 ]; then
  echo "== FAILED: ${FAILED[*]}"
  exit 1
fi
