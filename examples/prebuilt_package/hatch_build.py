"""The wheel holds compiled libraries (kernels/_brainevent/*.so), so it is not pure Python:
tag it for this platform (py3-none-linux_x86_64, say) instead of py3-none-any, so that pip
refuses it on a machine the libraries cannot load on. The libraries do not use Python's C
API, so any Python 3 will do. (For PyPI, retag with a manylinux tag, e.g. with auditwheel.)"""

import sysconfig

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        build_data["pure_python"] = False
        build_data["tag"] = f"py3-none-{platform}"
