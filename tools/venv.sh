#!/usr/bin/env bash
# tools/venv.sh NAME: prints the folder of a virtual environment of the PyPI packages pinned in
# tools/venvs/NAME.txt, made over Debian's /usr/bin/python3 the first time it is asked for and
# kept for the next runs: torch from PyPI is 5.6 GB and 3 minutes to install, so it is installed
# once per machine, never per test run. The folder is
#   ${ONNXMAP_VENVS:-${XDG_CACHE_HOME:-~/.cache}/onnxmap/venvs}/NAME-HASH
# HASH being the list's: a changed pin makes a new environment and removes the older ones of
# NAME. Never the system's Python: nothing is installed outside that folder. An install cut
# short is removed and made again at the next call (the folder counts only once pip has ended).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: tools/venv.sh NAME (one of tools/venvs/*.txt)}
list=tools/venvs/$name.txt
[ -f "$list" ] || { echo "tools/venv.sh: no $list" >&2; exit 2; }
root=${ONNXMAP_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/onnxmap/venvs}
venv=$root/$name-$(sha256sum "$list" | cut -c1-12)
mkdir -p "$root"
# One maker at a time: two suites asking at once share the install.
exec 9>"$root/$name.lock"
flock 9
if [ ! -f "$venv/.complete" ]; then
  echo "tools/venv.sh: installing $list into $venv (once per machine)" >&2
  for older in "$root/$name"-????????????; do
    [ -d "$older" ] && rm -rf "$older"
  done
  /usr/bin/python3 -m venv "$venv"
  # Quiet unless it fails: its log is shown then.
  if ! log=$("$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$list" 2>&1); then
    echo "$log" >&2
    rm -rf "$venv"
    exit 1
  fi
  touch "$venv/.complete"
fi
echo "$venv"
