"""The load pipeline as explicit stages, each passing a small value to the next: request.py ->
module_key.py -> a cache hit, or plan.py -> execute.py; load.py runs them (docs/architecture.md)."""
