"""The JSON Schemas of the artifact files (knowledge_chunks, the schema 2 manifest), shipped
with the package for anyone who reads a set."""
