"""Compile once per jax.distributed job: 4 processes on 127.0.0.1, one cache directory each.

Each process is a separate interpreter that initialises ``jax.distributed`` on the CPU and
loads the same module through a g++ wrapper that logs every command, so the log shows how
many builds the whole job ran.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from brainevent.cache.manifest import Manifest
from brainevent.distributed import CHUNK_BYTES

pytestmark = pytest.mark.slow  # four interpreters that import JAX: a few seconds per test

SRC_DIR = str(Path(__file__).resolve().parents[2] / "src")
PROCESSES = 4

KERNEL = r"""
#include "brainevent/common.h"
// @BE axpb arg ret
void axpb(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 3.0f * x.data_ptr<float>()[i] + 1.0f;
}
"""

# A library larger than one key-value chunk: the table lands in the file (it is not all zero).
BIG_KERNEL = KERNEL.replace(
    "// @BE",
    "extern const volatile unsigned char be_big_table[];\n"
    "const volatile unsigned char be_big_table[BIG_BYTES] = {1};\n// @BE",
).replace("+ 1.0f;", "+ 1.0f + 0.0f * be_big_table[i % BIG_BYTES];")

BROKEN = KERNEL.replace("3.0f *", "be_undeclared_scale *")

# One process of the job: loads the module, checks it against NumPy, reports as JSON.
CHILD = textwrap.dedent(
    """
    import json, logging, sys
    import jax
    process_id, count, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    name, source = sys.argv[4], sys.argv[5]
    jax.distributed.initialize(
        f"127.0.0.1:{port}", num_processes=count, process_id=process_id, initialization_timeout=120
    )
    logging.basicConfig(format="[%(name)s] %(message)s")
    logging.getLogger("brainevent.distributed").setLevel(logging.INFO)
    import numpy as np
    import brainevent
    try:
        mod = brainevent.load_cpp_inline(name=name, cpp_sources=source, extra_cflags=sys.argv[6:])
        x = np.arange(1000, dtype=np.float32)
        ok = bool(np.array_equal(np.asarray(jax.jit(mod.axpb)(x)), 3 * x + 1))
        report = {"matches": ok, "built_now": mod.built_now, "entry": str(mod.cache_dir)}
    except brainevent.errors.BrainEventError as exc:
        report = {"error": type(exc).__name__, "message": str(exc)}
    print("REPORT " + json.dumps(report), flush=True)
    jax.distributed.shutdown()
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def job(tmp_path: Path) -> dict[str, Any]:
    """A counting g++ and one cache directory per process (hosts that share no filesystem)."""
    log = tmp_path / "compiler.log"
    cxx = tmp_path / "counting-g++"
    cxx.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec g++ "$@"\n')
    cxx.chmod(0o755)
    caches = [tmp_path / f"host{i}" / "cache" for i in range(PROCESSES)]
    return {"log": log, "cxx": cxx, "caches": caches}


def _env(job: dict[str, Any], cache: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        BRAINEVENT_CACHE_DIR=str(cache),
        BRAINEVENT_CXX=str(job["cxx"]),
        PYTHONPATH=SRC_DIR + os.pathsep + env.get("PYTHONPATH", ""),
        JAX_PLATFORMS="cpu",
        **extra,
    )
    return env


def run_job(
    job: dict[str, Any], name: str, source: str, *flags: str, **env: str
) -> list[tuple[dict[str, Any], str]]:
    """Starts the 4 processes and returns each one's report and stderr; a hang fails the test."""
    port = _free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(i), str(PROCESSES), str(port), name, source, *flags],
            env=_env(job, job["caches"][i], **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(PROCESSES)
    ]
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err[-3000:]
            line = next(line for line in out.splitlines() if line.startswith("REPORT "))
            results.append((json.loads(line[len("REPORT ") :]), err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    return results


def builds(log: Path) -> int:
    """Links the job ran: one per build of the module."""
    return sum(" -shared " in f" {line} " for line in log.read_text().splitlines()) if log.exists() else 0


def compiles(log: Path) -> int:
    return sum(" -c " in f" {line} " for line in log.read_text().splitlines()) if log.exists() else 0


def check_entries(job: dict[str, Any], reports: list[dict[str, Any]]) -> None:
    """Every process's own cache holds the same intact entry."""
    keys = set()
    for cache, report in zip(job["caches"], reports, strict=True):
        entry = Path(report["entry"])
        assert entry.is_relative_to(cache), f"{entry} is not in this process's cache {cache}"
        manifest = Manifest.load(entry)
        assert manifest is not None
        assert manifest.verify(entry, manifest.key) is None
        assert Manifest.load(entry) is not None
        keys.add((manifest.key, manifest.artifact_sha256))
    assert len(keys) == 1, keys


def test_four_processes_compile_once(job: dict[str, Any]) -> None:
    results = run_job(job, "dist_once", KERNEL)
    reports = [r for r, _ in results]
    assert all(r.get("matches") for r in reports), reports
    assert builds(job["log"]) == 1
    assert compiles(job["log"]) == 2  # the kernel unit and the binding, once for the job
    assert sum(r["built_now"] for r in reports) == 1
    check_entries(job, reports)
    assert sum("received module dist_once" in err for _, err in results) == PROCESSES - 1


def test_without_the_exchange_every_process_compiles(job: dict[str, Any]) -> None:
    """The opt-out, and the control for the test above: four builds."""
    reports = [r for r, _ in run_job(job, "dist_optout", KERNEL, BRAINEVENT_DISTRIBUTED_BUILD="0")]
    assert all(r.get("matches") for r in reports), reports
    assert builds(job["log"]) == PROCESSES
    assert all(r["built_now"] for r in reports)


def test_builder_failure_reaches_every_process(job: dict[str, Any]) -> None:
    results = run_job(job, "dist_broken", BROKEN, BRAINEVENT_DISTRIBUTED_TIMEOUT="60")
    for report, _ in results:
        assert report.get("error") == "CompileError", report
        assert "be_undeclared_scale" in report["message"], report["message"]
    assert builds(job["log"]) == 0
    kernel_compiles = [line for line in job["log"].read_text().splitlines() if "k0_dist_broken" in line]
    assert len(kernel_compiles) == 1, kernel_compiles


def test_a_process_that_has_the_entry_skips_the_exchange(job: dict[str, Any]) -> None:
    """Process 0 (the coordinator) hits; the other three still elect one builder."""
    prebuild = subprocess.run(
        [sys.executable, "-c", "import sys, brainevent; brainevent.load_cpp_inline("
         "name='dist_partial', cpp_sources=sys.argv[1], auto_register=False)", KERNEL],
        env=_env(job, job["caches"][0]),
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert prebuild.returncode == 0, prebuild.stderr[-3000:]
    assert builds(job["log"]) == 1
    results = run_job(job, "dist_partial", KERNEL)
    reports = [r for r, _ in results]
    assert all(r.get("matches") for r in reports), reports
    assert reports[0]["built_now"] is False
    assert "distributed" not in results[0][1]  # the hit never touched the key-value store
    assert builds(job["log"]) == 2  # the prebuild, then one build for processes 1-3
    assert sum(r["built_now"] for r in reports) == 1
    check_entries(job, reports)


def test_large_artifact_travels_in_chunks(job: dict[str, Any]) -> None:
    size = CHUNK_BYTES + CHUNK_BYTES // 2
    results = run_job(job, "dist_big", BIG_KERNEL, f"-DBIG_BYTES={size}")
    reports = [r for r, _ in results]
    assert all(r.get("matches") for r in reports), reports
    assert builds(job["log"]) == 1
    check_entries(job, reports)
    manifest = Manifest.load(Path(reports[1]["entry"]))
    assert manifest is not None
    assert (Path(reports[1]["entry"]) / manifest.artifact).stat().st_size > CHUNK_BYTES
    published = [err for _, err in results if "published module dist_big" in err]
    assert len(published) == 1 and " in 2 chunk(s)" in published[0], published


CUDA_KERNEL = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"
__global__ void axpb_kernel(const float* x, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3.0f * x[i] + 1.0f;
}
// @BE axpb arg ret stream
void axpb(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    int64_t n = x.numel();
    float* o = out.data_ptr<float>();
    axpb_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(x.data_ptr<float>(), o, n);
    BE_CHECK_KERNEL_LAUNCH();
}
"""

# One GPU process: the GPU it uses is its rank modulo the GPUs the driver sees (two
# processes share a single GPU, whose memory JAX then must not preallocate).
CUDA_CHILD = textwrap.dedent(
    """
    import json, sys
    import jax
    from brainevent.toolchain.cuda_driver import probe_devices
    rank, port, name, source = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    gpus = len(probe_devices().devices)
    jax.distributed.initialize(
        f"127.0.0.1:{port}", num_processes=2, process_id=rank, local_device_ids=[rank % gpus]
    )
    import numpy as np
    import brainevent
    mod = brainevent.load_cuda_inline(name=name, cuda_sources=source)
    x = np.arange(4096, dtype=np.float32)
    device = jax.local_devices()[0]
    out = np.asarray(jax.jit(mod.axpb)(jax.device_put(x, device)))
    report = {"matches": bool(np.array_equal(out, 3 * x + 1)), "built_now": mod.built_now,
              "entry": str(mod.cache_dir), "device": str(device), "gpus": gpus}
    print("REPORT " + json.dumps(report), flush=True)
    jax.distributed.shutdown()
    """
)


@pytest.mark.gpu
@pytest.mark.nvcc
def test_two_gpu_processes_compile_once(tmp_path: Path) -> None:
    """Two processes (one GPU each where there are two, else sharing one) compile once."""
    log = tmp_path / "compiler.log"  # the host compiler: it compiles the shared decoder of a first build
    cxx = tmp_path / "counting-g++"
    cxx.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec g++ "$@"\n')
    cxx.chmod(0o755)
    port = _free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ)
        env.update(
            BRAINEVENT_CACHE_DIR=str(tmp_path / f"host{rank}"),
            BRAINEVENT_CXX=str(cxx),
            PYTHONPATH=SRC_DIR + os.pathsep + env.get("PYTHONPATH", ""),
            XLA_PYTHON_CLIENT_PREALLOCATE="false",
        )
        env.pop("JAX_PLATFORMS", None)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", CUDA_CHILD, str(rank), str(port), "dist_gpu", CUDA_KERNEL],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    reports = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-3000:]
            line = next(line for line in out.splitlines() if line.startswith("REPORT "))
            reports.append(json.loads(line[len("REPORT ") :]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert all(r["matches"] for r in reports), reports
    assert sum(r["built_now"] for r in reports) == 1, reports
    decoders = [line for line in log.read_text().splitlines() if " -c " in line and "decoder.cpp" in line]
    assert len(decoders) == 1, decoders  # one build for the job (each host's cache starts empty)
    for rank, report in enumerate(reports):
        entry = Path(report["entry"])
        assert entry.is_relative_to(tmp_path / f"host{rank}")
        manifest = Manifest.load(entry)
        assert manifest is not None and manifest.verify(entry, manifest.key) is None


# The key-value adapter on a real one-process coordination service.
KV_CHILD = textwrap.dedent(
    """
    import json, sys
    import jax
    jax.distributed.initialize(f"127.0.0.1:{sys.argv[1]}", num_processes=1, process_id=0)
    from jax._src.distributed import global_state
    from brainevent.distributed.exchange import KeyValue, current

    kv = KeyValue(global_state.client, 0, 2)
    blob = bytes(range(256)) * 3
    kv.put("v", blob)
    kv.put("v", blob[::-1])  # overwriting is allowed (a retried build)
    out = {
        "current": current() is not None,
        "claims": [kv.claim("claim") for _ in range(3)],
        "roundtrip": kv.get("v", 5) == blob[::-1],
        "missing": kv.get("none", 0.2),
    }
    print("REPORT " + json.dumps(out))
    jax.distributed.shutdown()
    """
)


def test_key_value_adapter() -> None:
    env = dict(os.environ, PYTHONPATH=SRC_DIR, JAX_PLATFORMS="cpu")
    command = [sys.executable, "-c", KV_CHILD, str(_free_port())]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(next(x for x in done.stdout.splitlines() if x.startswith("REPORT "))[7:])
    assert report == {
        "current": False,  # a one-process job has nothing to exchange
        "claims": [True, False, False],
        "roundtrip": True,
        "missing": None,
    }
