"""`scripts/setup-system.sh`: the Debian packages by what needs them (issue 36: launch.sh
installed Chromium and build-essential, which only the tests need, and the README promised no
upgrade while apt upgraded Kerberos, glib, pcre2 and e2fsprogs libraries)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "setup-system.sh"


def listed(*sets: str) -> list[str]:
    done = subprocess.run(
        [str(SCRIPT), "--list", *sets], check=True, capture_output=True, text=True
    )
    return done.stdout.split()


def test_the_main_job_installs_neither_the_browser_nor_tmux() -> None:
    launch = listed("server", "code-server")
    assert {"bubblewrap", "git", "python3-venv", "g++", "make", "libkrb5-dev"} <= set(launch)
    assert not {"chromium", "tmux", "build-essential"} & set(launch)


def test_the_terminal_clients_install_no_compiler() -> None:
    assert not {"g++", "make", "libkrb5-dev", "chromium", "tmux"} & set(listed("server"))


def test_the_tests_get_every_set_each_package_once() -> None:
    everything = listed("server", "code-server", "tests")
    assert {"chromium", "tmux", "g++", "bubblewrap"} <= set(everything)
    assert len(everything) == len(set(everything))


def test_an_unknown_set_is_a_usage_error() -> None:
    done = subprocess.run([str(SCRIPT), "--list", "browser"], capture_output=True, text=True)
    assert done.returncode == 64
    assert "unknown set: browser" in done.stderr


def fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_upgrades_a_new_package_brings_are_named_before_the_install(tmp_path: Path) -> None:
    """apt-get upgrades an installed library when a new package needs it newer: the script
    says which, from apt's own simulation, then installs only what is missing."""
    calls = tmp_path / "calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    installed = '[ "${@: -1}" = libkrb5-dev ] && exit 1\necho "install ok installed"\n'
    fake(bin_dir, "dpkg-query", installed)
    fake(
        bin_dir,
        "apt-get",
        f'echo "$*" >>{calls}\n'
        'case " $* " in *" --simulate "*)\n'
        "  echo 'NOTE: This is only a simulation!'\n"
        "  echo 'Inst libkrb5-3 [1.20.1-2+deb12u2] (1.20.1-2+deb12u5 Debian-Security:12 [amd64])'\n"
        "  echo 'Inst libkrb5-dev (1.20.1-2+deb12u5 Debian-Security:12 [amd64])'\n"
        "  echo 'Conf libkrb5-3 (1.20.1-2+deb12u5 Debian-Security:12 [amd64])' ;;\n"
        "esac\n",
    )
    fake(bin_dir, "sudo", '[ "$1" = -n ] && shift\nexec "$@"\n')
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [str(SCRIPT), "code-server"], env=env, check=True, capture_output=True, text=True
    )
    named = [line.strip() for line in done.stdout.splitlines() if line.startswith("  ")]
    assert named == ["libkrb5-3 1.20.1-2+deb12u2 -> 1.20.1-2+deb12u5"]  # libkrb5-dev is new
    update, simulation, install = calls.read_text().splitlines()
    assert update == "update -qq"
    assert simulation.endswith("--no-upgrade libkrb5-dev --simulate")
    assert install == "install -y -qq --no-install-recommends --no-upgrade libkrb5-dev"


def test_nothing_missing_runs_no_apt(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake(bin_dir, "dpkg-query", 'echo "install ok installed"\n')
    fake(bin_dir, "apt-get", "exit 1\n")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([str(SCRIPT), "server", "tests"], env=env, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "")
