__version__ = "0.3.0"

# Bump when the generated binding code changes shape: it is part of every cache key.
# 11: trampolines return nothing and the decoder catches; 10: declared result shapes in the
# parameter table; 9: one prebuilt decoder per toolchain
BINDING_SCHEMA = 11
