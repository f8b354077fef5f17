"""Page -> Chunk: every field of the chunk contract decided in one place (chunks.py), a page at a
time (stream.py), and learns written by a chat model for review (learns_gen.py).
"""
