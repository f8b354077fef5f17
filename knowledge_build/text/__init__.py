"""Text analysis with no knowledge of HTML: Japanese normalisation, lemmas, readings and bigrams
(ja.py, and the token cache of a build in token_cache.py), TeX written as text (tex.py), ASCII
slugs of titles (slugs.py), the school thesaurus (thesaurus.py), and splitting long text into
windows (windows.py).
"""
