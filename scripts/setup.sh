#!/usr/bin/env bash
# Installs what attnbench needs to build and test, and nothing that is already
# there: a no-op on a machine that has everything. Debian/Ubuntu packages via
# apt-get (as root, or through sudo), Python packages via pip.
set -euo pipefail

packages=(cmake g++ make git nlohmann-json3-dev libcli11-dev libbenchmark-dev libgtest-dev libgmock-dev)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    sudo_cmd=()
  elif command -v sudo >/dev/null; then
    sudo_cmd=(sudo)
  else
    echo "setup: missing packages ${missing[*]} and no root access; install them and rerun" >&2
    exit 4
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The results-schema test cross-checks our validator with Python's jsonschema.
python=$(command -v python3 || true)
if [[ -n "$python" ]] && ! "$python" -c "import jsonschema" 2>/dev/null; then
  echo "setup: installing the Python package jsonschema"
  "$python" -m pip install --quiet -r "$(dirname "$0")/requirements.txt"
fi
