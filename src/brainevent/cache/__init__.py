"""Content-addressed store of compiled modules: key schema, locks, atomic publish, manifests.

Nothing is imported here, so that importing one submodule does not import the rest.
"""
