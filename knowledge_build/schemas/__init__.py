"""The JSON Schemas of the artifact files (knowledge_chunks, manifest of schema 1 and 2), shipped
with the package for anyone who reads a set."""
