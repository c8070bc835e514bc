"""Writing prebuilt modules into a user's own package (``brainevent build --into``); cache/bundle.py
reads them (docs/architecture.md, "Beyond one process")."""
