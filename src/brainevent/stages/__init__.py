"""The load pipeline as explicit stages, each passing a small frozen value to the next.

``LoadRequest`` (request.py) -> ``ModuleKey`` (module_key.py) -> a cache hit, or ``BuildPlan``
(plan.py) -> build (execute.py) -> the published entry -> ``CompiledModule`` (load.py runs them
and registers it). The table of stages: docs/architecture.md, "The pipeline".
"""
