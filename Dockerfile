# syntax=docker/dockerfile:1
#
# brainevent images, one target each:
#   cpu     CPU-only JAX and g++                                on BASE_IMAGE
#   cuda13  JAX on CUDA 13; nvcc comes from the pip wheels      on BASE_IMAGE
#   cuda12  JAX on CUDA 12; nvcc comes from the CUDA devel base on CUDA12_BASE_IMAGE
#
#   docker build --target cpu -t brainevent:cpu .
#   docker run --rm brainevent:cpu                       # runs the test suite
#   docker run --rm -v "$PWD/kernels:/kernels:ro" -v brainevent-cache:/cache \
#       brainevent:cuda13 brainevent build /kernels --arch sm_80 --arch sm_90 --cache-dir /cache
#
# Every base image is a build argument, so a mirror or a locally built base can stand
# in (docker/build-podman.sh builds on a debootstrapped Debian this way). Python
# packages are pinned by docker/constraints.txt. The kernel cache is the volume /cache.
# PIP_CERT (optional) names a CA bundle, mounted into the build, for pip to trust.

ARG BASE_IMAGE=debian:bookworm-slim
ARG CUDA12_BASE_IMAGE=nvidia/cuda:12.6.3-devel-ubuntu24.04

# ------------------------------------------------------------- system layers
FROM ${BASE_IMAGE} AS system
COPY docker/install-system.sh /tmp/install-system.sh
RUN sh /tmp/install-system.sh && rm /tmp/install-system.sh
COPY docker/entrypoint.sh /usr/local/bin/brainevent-entrypoint
ENV PATH=/opt/venv/bin:$PATH \
    BRAINEVENT_CACHE_DIR=/cache \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
VOLUME ["/cache"]
WORKDIR /opt/brainevent
ENTRYPOINT ["/usr/local/bin/brainevent-entrypoint"]
CMD ["test"]

FROM ${CUDA12_BASE_IMAGE} AS system-cuda12
COPY docker/install-system.sh /tmp/install-system.sh
RUN sh /tmp/install-system.sh && rm /tmp/install-system.sh
COPY docker/entrypoint.sh /usr/local/bin/brainevent-entrypoint
ENV PATH=/opt/venv/bin:$PATH \
    BRAINEVENT_CACHE_DIR=/cache \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
VOLUME ["/cache"]
WORKDIR /opt/brainevent
ENTRYPOINT ["/usr/local/bin/brainevent-entrypoint"]
CMD ["test"]

# ------------------------------------------------------------- the wheel, built once
FROM system AS wheel
COPY pyproject.toml README.md /build/
COPY src /build/src
# A fixed timestamp makes the wheel's zip entries independent of the build time.
ENV SOURCE_DATE_EPOCH=1700000000
ARG PIP_CERT
RUN pip wheel --no-deps --no-cache-dir --wheel-dir /wheels /build

# ------------------------------------------------------------- what the images carry
# The suite, the docs and the pins, copied into each image in one layer after the
# install, so editing a test does not re-run the install.
FROM system AS suite
COPY docker/constraints.txt pyproject.toml README.md /opt/brainevent/
COPY docs /opt/brainevent/docs
COPY tests /opt/brainevent/tests

# ------------------------------------------------------------- the images
# Each image installs its extra and the `test` extra, the one list of what the suite
# needs, with the pins bind-mounted into the install step; nothing else is named here
# (tests/packaging/test_dockerfile.py checks it). The tests that check a checkout (the
# linters, the docs site, the import graph, the examples) skip in an image: it holds no
# src/ and no examples/. (The wheel is copied, not bind-mounted from its stage: podman
# 4.3 cannot bind-mount from a cached stage.)
FROM system AS cpu
COPY --from=wheel /wheels /wheels
ARG PIP_CERT
RUN --mount=type=bind,source=docker/constraints.txt,target=/opt/brainevent/constraints.txt \
    set -- /wheels/brainevent-*.whl \
    && pip install --no-cache-dir -c constraints.txt "$1[cpu,test]" \
    && rm -rf /wheels
COPY --from=suite /opt/brainevent /opt/brainevent
USER 10001:10001

FROM system AS cuda13
COPY --from=wheel /wheels /wheels
ARG PIP_CERT
RUN --mount=type=bind,source=docker/constraints.txt,target=/opt/brainevent/constraints.txt \
    set -- /wheels/brainevent-*.whl \
    && pip install --no-cache-dir -c constraints.txt "$1[cuda13,test]" \
    && rm -rf /wheels
COPY --from=suite /opt/brainevent /opt/brainevent
USER 10001:10001

# Not buildable without a registry that serves nvidia/cuda (see docs/install.md).
FROM system-cuda12 AS cuda12
COPY --from=wheel /wheels /wheels
ARG PIP_CERT
RUN --mount=type=bind,source=docker/constraints.txt,target=/opt/brainevent/constraints.txt \
    set -- /wheels/brainevent-*.whl \
    && pip install --no-cache-dir -c constraints.txt "$1[cuda12,test]" \
    && rm -rf /wheels
COPY --from=suite /opt/brainevent /opt/brainevent
USER 10001:10001
