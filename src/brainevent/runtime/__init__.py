"""Loading compiled modules: dlopen, registration with JAX, CompiledModule and its call sugar."""
