#!/usr/bin/env bash
# Debian packages the server and its tests use: bubblewrap (the sandbox for commands that run
# without asking), git (workspace checkpoints), tmux (the terminal tests of `tiller chat`),
# ripgrep; and what the VS Code extension's end-to-end tests need: Chromium, and the headers and
# tools code-server's native modules build with (kerberos needs libkrb5-dev, keytar
# libsecret-1-dev, native-keymap libx11-dev and libxkbfile-dev). Installs only what is missing;
# needs root (or sudo -n).
set -euo pipefail
packages=(bubblewrap git tmux ripgrep python3 python3-venv python3-pip)
packages+=(chromium libkrb5-dev libsecret-1-dev libx11-dev libxkbfile-dev pkg-config build-essential)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
export DEBIAN_FRONTEND=noninteractive
as_root apt-get update -qq
as_root apt-get install -y -qq --no-install-recommends --no-upgrade "${missing[@]}" </dev/null
