#!/bin/sh
# Entry point of the brainevent images.
#
#   IMAGE                         run the test suite shipped in the image (pytest -q)
#   IMAGE test [PYTEST ARGS]      the same, with pytest arguments
#   IMAGE brainevent ARGS         the command line, e.g.
#                                 brainevent build /kernels --arch sm_80 --arch sm_90 --cache-dir /cache
#   IMAGE COMMAND ARGS            any other command, as given
#
# Without a GPU, JAX_PLATFORMS=cpu is set (unless already set) so that the CUDA
# images' JAX plugin does not probe for a device; GPU tests then skip with a reason.
set -eu

if [ -z "${JAX_PLATFORMS-}" ]; then
    if ! python -c 'import sys
from brainevent.toolchain.cuda_driver import probe_devices
p = probe_devices()
sys.exit(0 if p.available and p.devices else 1)' >/dev/null 2>&1; then
        export JAX_PLATFORMS=cpu
    fi
fi

if [ "$#" -eq 0 ]; then
    set -- test
fi

case "$1" in
    test)
        shift
        if [ "$#" -eq 0 ]; then
            set -- -q
        fi
        cd /opt/brainevent
        exec python -m pytest -p no:cacheprovider "$@"
        ;;
    *)
        exec "$@"
        ;;
esac
