#!/usr/bin/env bash
# Installs what attnbench needs to build and test, and nothing that is already
# there: a no-op on a machine that has everything. Debian/Ubuntu packages via
# apt-get (as root, or through sudo); the Python packages jsonschema and
# matplotlib via apt for Debian's python3, via pip (scripts/requirements.txt)
# for any other.
set -euo pipefail

packages=(cmake g++ make git binutils nlohmann-json3-dev libcli11-dev libbenchmark-dev libgtest-dev libgmock-dev
          libboost-context-dev libre2-dev libopenblas-openmp-dev)

if [[ $(id -u) -eq 0 ]]; then
  sudo_cmd=()
else
  sudo_cmd=(sudo)
fi

apt_updated=0
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if ((!apt_updated)); then
    "${sudo_cmd[@]}" apt-get update -qq
    apt_updated=1
  fi
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "$@"
}

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ ${#sudo_cmd[@]} -gt 0 ]] && ! command -v sudo >/dev/null; then
    echo "setup: missing packages ${missing[*]} and no root access; install them and rerun" >&2
    exit 4
  fi
  apt_install "${missing[@]}"
fi

# Optional: clang and its runtime (libFuzzer) build the fuzz targets of
# tests/fuzz/; without them the build leaves the targets out.
optional=()
for package in clang libclang-rt-dev; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    optional+=("$package")
  fi
done
if ((${#optional[@]})) && { [[ ${#sudo_cmd[@]} -eq 0 ]] || command -v sudo >/dev/null; }; then
  echo "setup: installing ${optional[*]} (for the fuzz targets)"
  apt_install "${optional[@]}" || echo "setup: could not install ${optional[*]}; the fuzz targets are left out" >&2
fi

# The Python packages of the scripts and tests (jsonschema for the schema
# cross-check, matplotlib for scripts/plot.py), in the python3 first on PATH
# (scripts/build.sh hands the same one to CMake). Debian's own python takes them
# from apt (pip refuses to touch it); any other from pip (scripts/requirements.txt).
python_modules=(jsonschema matplotlib)
python=$(command -v python3 || true)
if [[ -z "$python" ]]; then
  echo "setup: installing python3"
  apt_install python3 "${python_modules[@]/#/python3-}"
else
  missing_modules=()
  for module in "${python_modules[@]}"; do
    "$python" -c "import $module" 2>/dev/null || missing_modules+=("$module")
  done
  if ((${#missing_modules[@]})); then
    echo "setup: installing the Python packages ${missing_modules[*]}"
    if [[ $(readlink -f "$python") == /usr/bin/* ]]; then
      apt_install "${missing_modules[@]/#/python3-}"
    else
      "$python" -m pip install --quiet -r "$(dirname "$0")/requirements.txt"
    fi
  fi
fi

# cuobjdump and nvdisasm, for the SASS structure check of the Hopper kernel
# (scripts/check_sm90_sass.py): the CUDA toolkit here ships without them, and
# NVIDIA publishes them as Python packages. Without them that one test skips,
# saying why; a failed download does not stop the set-up.
has_pip_cuobjdump='import glob, sys, nvidia; sys.exit(not any(glob.glob(p + "/cu*/bin/cuobjdump") for p in nvidia.__path__))'
if [[ -n "$python" && $(readlink -f "$python") != /usr/bin/* ]] && ! command -v cuobjdump > /dev/null &&
    [[ ! -x /usr/local/cuda/bin/cuobjdump ]] && ! "$python" -c "$has_pip_cuobjdump" 2> /dev/null; then
  echo "setup: installing cuobjdump and nvdisasm (pip: nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)"
  "$python" -m pip install --quiet "nvidia-cuda-cuobjdump>=13,<14" "nvidia-cuda-nvdisasm>=13,<14" ||
    echo "setup: could not install them; the SASS structure check (sm90_sass_structure) will skip"
fi
