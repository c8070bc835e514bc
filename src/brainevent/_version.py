__version__ = "0.3.0"

# Bump when the generated binding code changes shape: it is part of every cache key.
BINDING_SCHEMA = 9  # 9: handlers in the kernel unit, one prebuilt decoder per toolchain
