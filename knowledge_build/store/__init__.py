"""The writable stores behind one interface each: PostgreSQL with pgvector for the site's published
chunks (postgres.py, migrations/, a local server in server.py), the tutor's notes and imported
documents (notes.py, notes_index.py) and the web sources (sources.py), each in SQLite or Postgres
(sources_sqlite.py, sources_pg.py); what they share is in common.py.
"""
