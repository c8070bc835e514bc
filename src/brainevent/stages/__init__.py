"""The load pipeline as explicit stages, each passing a small frozen value to the next:

    LoadRequest (request.py)  ->  ModuleKey (module_key.py)  ->  cache hit, or on a miss
    BuildPlan (plan.py)  ->  build (execute.py)  ->  the artifact, a published
    CacheEntry (cache/store.py)  ->  CompiledModule (load.py registers it)

``load.py`` runs them: ``build(request)`` stops at the artifact, ``load(request)``
registers it. What differs between platforms is asked of the request's platform object
(``brainevent.platforms``); the cache store only looks up, lends a build slot and publishes.
"""
