#!/usr/bin/env bash
# Check an existing GPU machine's Python stack against the pins, then run the test
# suite the way the cuda13 image does, against this checkout.
#
#   docker/gpu-stack-check.sh [PYTEST ARGS]        e.g. -q, -x -k cuda, -m gpu
#
# Meant for a GPU machine with no package index: jax, jaxlib, the CUDA 13 plugin and
# an nvcc are already installed there. Nothing is installed or downloaded.
#   1. For each package (see PACKAGES), prints "package pinned installed match":
#      the pin in docker/constraints.txt that applies to this Python, the installed
#      version ("missing" when absent) and yes / NO / missing / not pinned.
#   2. Prints the GPUs the driver reports and the nvcc brainevent finds (and how).
#   3. Runs what the cuda13 image's entry point runs (docker/entrypoint.sh):
#      JAX_PLATFORMS=cpu only when it is unset and no GPU is found, then
#      python -m pytest -p no:cacheprovider [PYTEST ARGS, default -q]
#      from the repository root with PYTHONPATH=src, so the checkout is tested.
#      Unlike the image, the checkout also has the Dockerfile and the environment
#      files, so their checks run too (or skip with a reason).
# The exit status is pytest's.
#
# Settings (environment):
#   PYTHON       interpreter of the stack (default: python3)
#   PACKAGES     packages to compare, space-separated, or "all" for every pin that
#                applies here (default: the cuda13 image's main packages, below)
#   STRICT=1     stop before the tests when a package is missing or differs
#   PIP_RETRIES  (default 0) and PIP_TIMEOUT (default 5): the environment-file
#                checks dry-run pip; offline they then skip quickly.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
constraints="$here/constraints.txt"
python="${PYTHON:-python3}"
default_packages="jax jaxlib jax-cuda13-plugin jax-cuda13-pjrt nvidia-cuda-nvcc nvidia-cuda-crt
nvidia-nvvm nvidia-cuda-runtime nvidia-cuda-cccl ml-dtypes numpy scipy opt-einsum numba llvmlite
numba-cuda filelock ninja pytest hypothesis"
packages="${PACKAGES:-$default_packages}"

if ! command -v "$python" >/dev/null 2>&1; then
    echo "gpu-stack-check: no interpreter '$python' (set PYTHON)" >&2
    exit 2
fi
if [ ! -f "$constraints" ]; then
    echo "gpu-stack-check: $constraints not found" >&2
    exit 2
fi

echo "== interpreter: $("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
echo "== pins: $constraints"

# One argument per package name (read -d '' stops at the end of input: status 1).
read -r -d '' -a package_list <<<"$packages" || true
set +e
"$python" - "$constraints" "${package_list[@]}" <<'PY'
import re
import sys
from importlib import metadata

try:
    from packaging.markers import Marker
    from packaging.version import InvalidVersion, Version
except ImportError:  # no packaging: markers are not evaluated, versions compared as text
    Marker = None
    Version = None


def norm(name):
    return re.sub(r"[-_.]+", "-", name.strip().lower())


pins = {}
for raw in open(sys.argv[1], encoding="utf-8"):
    line = raw.split("#", 1)[0].strip()
    requirement, _, marker = line.partition(";")
    name, sep, version = requirement.partition("==")
    if line and sep:
        pins.setdefault(norm(name), []).append((version.strip(), marker.strip()))


def applies(marker):
    if not marker or Marker is None:
        return True
    try:
        return Marker(marker).evaluate()
    except Exception:
        return True


def same(a, b):
    if Version is not None:
        try:
            return Version(a) == Version(b)
        except InvalidVersion:
            pass
    return a == b


names = sys.argv[2:]
if names == ["all"]:
    names = sorted(name for name, entries in pins.items() if any(applies(m) for _, m in entries))

rows = []
bad = 0
for name in names:
    pinned = [v for v, m in pins.get(norm(name), []) if applies(m)]
    try:
        installed = metadata.version(name)
    except metadata.PackageNotFoundError:
        installed = None
    if installed is None:
        match = "missing"
    elif not pinned:
        match = "not pinned"
    elif any(same(installed, v) for v in pinned):
        match = "yes"
    else:
        match = "NO"
    if match == "NO" or (match == "missing" and pinned):
        bad += 1
    rows.append((name, " | ".join(pinned) or "-", installed or "missing", match))

header = ("package", "pinned", "installed", "match")
widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
for row in [header, *rows]:
    print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
if Marker is None:
    print("(packaging is not installed: every pin is shown, markers not evaluated)")
counts = {m: sum(r[3] == m for r in rows) for m in ("yes", "NO", "missing", "not pinned")}
print(", ".join(f"{label}: {counts[m]}" for m, label in (
    ("yes", "as pinned"), ("NO", "different"), ("missing", "missing"), ("not pinned", "not pinned"))))
sys.exit(1 if bad else 0)
PY
table_status=$?
set -e
if [ "$table_status" -gt 1 ]; then
    echo "gpu-stack-check: comparing the pins failed (status $table_status)" >&2
    exit "$table_status"
fi
if [ "$table_status" -ne 0 ] && [ "${STRICT:-0}" = 1 ]; then
    echo "gpu-stack-check: STRICT=1 and the stack differs from the pins: not running the tests" >&2
    exit 1
fi

cd "$repo"
export PYTHONPATH="$repo/src${PYTHONPATH:+:$PYTHONPATH}"
export PIP_RETRIES="${PIP_RETRIES:-0}" PIP_TIMEOUT="${PIP_TIMEOUT:-5}"

echo "== toolchain (brainevent from $repo/src)"
"$python" - <<'PY' || echo "(the toolchain probe failed: see above)"
import brainevent
from brainevent.errors import BrainEventError
from brainevent.toolchain.cuda_driver import probe_devices
from brainevent.toolchain.nvcc import find_nvcc

print(f"brainevent {getattr(brainevent, '__version__', '?')} from {brainevent.__file__}")
p = probe_devices()
if p.available and p.devices:
    print("GPUs: " + ", ".join(f"{d.name} (sm_{d.major}{d.minor})" for d in p.devices))
else:
    print(f"no CUDA device: {p.reason}")
try:
    info = find_nvcc()
    version = ".".join(map(str, info.version))
    print(f"nvcc: {info.path} (CUDA {version}, found via {info.found_via})")
except BrainEventError as exc:
    print("nvcc: none found: " + (str(exc).splitlines() or ["?"])[0])
PY

# The entry point's rule: without a GPU, keep JAX's CUDA plugin from probing for one.
if [ -z "${JAX_PLATFORMS-}" ]; then
    if ! "$python" -c 'import sys
from brainevent.toolchain.cuda_driver import probe_devices
p = probe_devices()
sys.exit(0 if p.available and p.devices else 1)' >/dev/null 2>&1; then
        export JAX_PLATFORMS=cpu
    fi
fi
echo "== JAX_PLATFORMS=${JAX_PLATFORMS-(unset)}"

if [ "$#" -eq 0 ]; then
    set -- -q
fi
echo "== $python -m pytest -p no:cacheprovider $*"
set +e
"$python" -m pytest -p no:cacheprovider "$@"
status=$?
set -e
if [ "$table_status" -ne 0 ]; then
    echo "gpu-stack-check: note: the stack differs from docker/constraints.txt (table above)"
fi
exit "$status"
