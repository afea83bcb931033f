#!/usr/bin/env bash
# Debian packages, by what needs them. Installs only those of the named sets that are missing;
# needs root (or sudo -n).
#   scripts/setup-system.sh SET...         install them
#   scripts/setup-system.sh --list SET...  print them, one a line; nothing installed
# Sets:
#   server       what the server uses: bubblewrap (the sandbox for commands that run without
#                asking), git (workspace checkpoints), ripgrep, Python 3.11+ with venv and pip
#   code-server  what code-server's install builds its native modules with (npm, node-gyp):
#                a C++ compiler and make, Python for node-gyp, libkrb5-dev (kerberos), and
#                ripgrep (fed to @vscode/ripgrep instead of a download from GitHub)
#   tests        what only the tests use: tmux (the terminal tests of `tiller chat`) and
#                Chromium (the VS Code extension's end-to-end tests)
# scripts/run.sh installs `server`; scripts/launch.sh `server`, plus `code-server` unless VS
# Code's `code` is on PATH; scripts/test.sh all three.
#
# apt-get upgrades no package it was not asked for unless a new package needs a newer version of
# it (libkrb5-dev needs the Kerberos libraries of its own version, for one): such upgrades are
# named before the install runs.
set -euo pipefail

packages_of() {  # packages_of SET
  case "$1" in
    server) echo bubblewrap git ripgrep python3 python3-venv python3-pip ;;
    code-server) echo g++ make python3 libkrb5-dev ripgrep ;;
    tests) echo tmux chromium ;;
    *) echo "unknown set: $1 (server, code-server, tests)" >&2; return 64 ;;
  esac
}

list=false
if [ "${1:-}" = --list ]; then
  list=true
  shift
fi
[ "$#" -gt 0 ] || { echo "usage: $0 [--list] SET... (server, code-server, tests)" >&2; exit 64; }
packages=()
for set in "$@"; do
  more=$(packages_of "$set")
  read -r -a more <<<"$more"
  for package in "${more[@]}"; do
    [[ " ${packages[*]} " == *" $package "* ]] || packages+=("$package")
  done
done
if "$list"; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
export DEBIAN_FRONTEND=noninteractive
install=(apt-get install -y -qq --no-install-recommends --no-upgrade "${missing[@]}")
as_root apt-get update -qq
echo "Installing the missing Debian packages: ${missing[*]}"
# A simulation first: "Inst NAME [INSTALLED] (CANDIDATE ...)" is an upgrade of an installed one.
upgrades=$(as_root "${install[@]}" --simulate </dev/null | awk '$1 == "Inst" && $3 ~ /^\[/ {
  gsub(/[][]/, "", $3); sub(/^\(/, "", $4); printf "  %s %s -> %s\n", $2, $3, $4 }')
if [ -n "$upgrades" ]; then
  echo "apt-get also upgrades these installed packages, which the new ones need at a newer version:"
  echo "$upgrades"
fi
as_root "${install[@]}" </dev/null
