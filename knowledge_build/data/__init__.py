"""Data shipped with knowledge-build (installed as the package knowledge_build.data)."""
