"""Does ``brainevent.cuda_kernel`` work on a pip-only CUDA 12 install, with no nvcc anywhere?

CUDA 12's pip wheels carry no nvcc: ``nvidia-cuda-nvrtc-cu12`` (libnvrtc.so.12) and
``nvidia-cuda-runtime-cu12`` (the runtime headers) are all a CUDA 12 JAX brings. This script
hides nvcc (PATH without it, CUDA_HOME/CUDA_PATH unset, BRAINEVENT_NVCC pointing nowhere),
then checks, printing what it finds:

1. which libnvrtc brainevent uses (doctor's ``found_via``), and that it is NVRTC 12;
2. NVRTC compiles the tutorial's vector add, and a kernel using ``cuda_fp16.h`` from the
   runtime headers found, to sm_80 cubins (no GPU needed);
3. the launcher libraries that run cubins (NVRTC, Triton, Numba-CUDA kernels) and
   ``numba_cuda_callable``'s functions build with the host C++ compiler alone;
4. where JAX sees a GPU: ``cuda_kernel``'s vector add under ``jit`` equals NumPy's, and so do
   ``numba_cuda_kernel``'s and ``numba_cuda_callable``'s where numba-cuda is installed.

It runs itself again in a child process with nvcc hidden. Usage, on a machine with pip's
CUDA 12 stack installed (``pip install "jax[cuda12]"``)::

    python tests/nvrtc/pip_cuda12_check.py

or with the two wheels unpacked into a directory (``python -m zipfile -e <wheel> DIR`` for
each): the script then runs itself in a throwaway virtual environment whose site-packages
holds only those wheels (the current environment's packages come through a ``.pth`` file,
which NVIDIA's library search does not scan, so an NVRTC 13 installed here is not used)::

    python tests/nvrtc/pip_cuda12_check.py --wheels DIR

Exit status 0 when every check that the machine allows passed; ``--require-gpu`` makes a
missing GPU a failure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"

HALF = r"""
#include <cuda_fp16.h>
extern "C" __global__ void half_add(const __half* x, const __half* y, __half* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __hadd(x[i], y[i]);
}
"""


def hidden_nvcc_env(scratch: Path) -> dict[str, str]:
    """The environment with nvcc out of reach (the host compiler stays on PATH)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    keep = [d for d in ("/usr/bin", "/bin") if os.path.isdir(d) and not os.path.isfile(f"{d}/nvcc")]
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), *keep])
    env["BRAINEVENT_NVCC"] = str(scratch / "no-nvcc")
    env["BRAINEVENT_CACHE_DIR"] = str(scratch / "cache")
    env["PYTHONPATH"] = str(SRC)
    return env


CHILD = "BRAINEVENT_CU12_CHECK_CHILD"


def run_hidden(wheels: Path | None, argv: list[str]) -> int:
    """Re-runs this script with nvcc hidden: in this interpreter, or (``wheels``) in a venv
    whose site-packages holds the unpacked wheels."""
    with tempfile.TemporaryDirectory(prefix="be-cu12-") as tmp:
        scratch = Path(tmp)
        env = hidden_nvcc_env(scratch)
        env[CHILD] = "1"
        if wheels is None:
            return subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv], env=env).returncode
        venv = scratch / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = venv / "bin" / "python"
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        for entry in wheels.iterdir():  # nvidia/ and the .dist-info directories
            if entry.name == "nvidia":
                for package in entry.iterdir():
                    (Path(purelib) / "nvidia").mkdir(exist_ok=True)
                    (Path(purelib) / "nvidia" / package.name).symlink_to(package)
            else:
                (Path(purelib) / entry.name).symlink_to(entry)
        here = [p for p in {sysconfig.get_paths()["purelib"], *site.getsitepackages()} if os.path.isdir(p)]
        (Path(purelib) / "be_parent_env.pth").write_text("\n".join(here) + "\n")
        return subprocess.run([str(python), str(Path(__file__).resolve()), *argv], env=env).returncode


def check(expect_major: int, require_gpu: bool) -> int:
    import jax
    import numpy as np

    import brainevent
    import brainevent.nvrtc as nv
    from brainevent.launchers.cubin import launcher_for
    from brainevent.nvrtc.cache import nvrtc_identity
    from brainevent.nvrtc.process import nvrtc_info
    from brainevent.nvrtc.toolkit import runtime_include_dirs

    sys.path.insert(0, str(HERE))
    from kernels import VECTOR_ADD

    nvcc = shutil.which("nvcc")
    print(f"nvcc on PATH: {nvcc or 'none'}; CUDA_HOME: {os.environ.get('CUDA_HOME', 'unset')}")
    if nvcc:
        print("FAIL: nvcc is still reachable")
        return 1
    bound = nvrtc_info()
    print(f"libnvrtc: {bound.path} (NVRTC {bound.version[0]}.{bound.version[1]})")
    print(f"found_via: {bound.found_via}")
    print(f"identity: {nvrtc_identity()}")
    print(f"runtime headers: {', '.join(runtime_include_dirs()) or 'none'}")
    if bound.version[0] != expect_major:
        print(f"FAIL: expected NVRTC {expect_major}, got {bound.version[0]}")
        return 1
    for source, name in ((VECTOR_ADD, "add"), (HALF, "half_add")):
        compiled = nv.compile(source, name, "sm_80")
        assert compiled.kind == "cubin" and compiled.code[:4] == b"\x7fELF", compiled.code[:8]
        print(f"compiled {name} for sm_80: {len(compiled.code)} bytes of cubin")
    launcher = launcher_for(2, 1)
    print(f"launcher built without nvcc: {launcher.library._name}")
    gpus = numba_kinds()
    if not gpus:
        print("no GPU visible to JAX: compile checks passed, nothing launched")
        return 1 if require_gpu else 0
    n = 100_000
    x = np.linspace(-3, 3, n, dtype=np.float32)
    y = np.cos(x)
    add = brainevent.cuda_kernel(
        VECTOR_ADD, "add", jax.ShapeDtypeStruct(x.shape, x.dtype), launch_dims=n, n=n
    )
    got = np.asarray(jax.jit(add)(x, y))
    np.testing.assert_allclose(got, x + y, rtol=1e-6)
    print(f"cuda_kernel vector add on {gpus[0].device_kind}: matches NumPy")
    return 0


def numba_kinds() -> list:
    """Builds the launcher of ``numba_cuda_callable`` (``numba_cuda_kernel``'s is the cubin
    launcher) and, where JAX sees a GPU and numba-cuda is installed, runs both kinds against
    NumPy; returns JAX's GPUs."""
    import jax
    import numpy as np

    import brainevent
    from brainevent.numba_bridge.cuda_callable import _launchers

    print(f"numba_cuda_callable launcher built without nvcc: {_launchers.get(2, 1).library._name}")
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    try:
        from numba import cuda
    except ImportError:
        print("numba-cuda not installed: its kernels not run")
        return gpus
    if not gpus:
        return gpus

    @cuda.jit
    def add(x, y, out):  # type: ignore[no-untyped-def]
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + y[i]

    def launch(x, y, out, stream):  # type: ignore[no-untyped-def]
        add[(x.size + 255) // 256, 256, stream](x, y, out)

    x = np.linspace(-3, 3, 10_000, dtype=np.float32)
    y, spec = np.sin(x), jax.ShapeDtypeStruct(x.shape, x.dtype)
    kernel = brainevent.numba_cuda_kernel(add, spec, launch_dims=x.size)
    callable_ = brainevent.numba_cuda_callable(launch, spec)
    for name, f in (("numba_cuda_kernel", kernel), ("numba_cuda_callable", callable_)):
        np.testing.assert_allclose(np.asarray(jax.jit(f)(x, y)), x + y, rtol=1e-6)
        print(f"{name} add on {gpus[0].device_kind}: matches NumPy")
    return gpus


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheels", type=Path, help="a directory of unpacked CUDA 12 wheels")
    parser.add_argument("--expect-major", type=int, default=12, help="the NVRTC major version expected")
    parser.add_argument("--require-gpu", action="store_true", help="fail when no GPU is visible")
    args = parser.parse_args()
    if os.environ.get(CHILD):
        return check(args.expect_major, args.require_gpu)
    rest = ["--expect-major", str(args.expect_major)] + (["--require-gpu"] if args.require_gpu else [])
    return run_hidden(args.wheels.resolve() if args.wheels else None, rest)


if __name__ == "__main__":
    sys.exit(main())
