"""The artifact set (schema 2, the only one; a schema 1 set is refused with what to do): its file
names (layout.py), how it is assembled and written atomically (artifacts.py, artifacts_v2.py), the row columns and lexical postings a loader
maps (rows.py, postings.py), opening and verifying a set (verify.py, verify_v2.py, files.py), and
the memo that lets a build with nothing to do keep its set (build_memo.py).
"""
