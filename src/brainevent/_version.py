__version__ = "0.3.0"

# Bump when the generated binding code changes shape: it is part of every cache key.
BINDING_SCHEMA = 9
