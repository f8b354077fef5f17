"""THE ranking, stated once: every rule by which a question's results are ordered, for every engine.

Three engines answer a question: the artifacts (search/, Python over FAISS and BM25), the database
(store/functions/*.sql, rendered from these numbers) and the students' search box (browser/static/
knowledge-search.js, fed by the bundle's entry point). Each takes its rules from here, as data or as the
numbers rendered into it, and passes the same conformance cases (ranking/conformance/*.jsonl):

- settings.py: SearchSettings (channel weights, candidates, every relevance constant), the query limits
  (MAX_QUERY_CHARS, MAX_MATCH_COUNT, check_query), BM25's K1 and B, and each engine's own lexical fields and
  their weights, with the reason each differs (the database reads bigrams, the box vocabulary pieces);
- priors.py: the type-prior table as data, {type: (weight, weight_when_named)}, and the words by which a
  query names a kind (intended_type);
- fusion.py: dbsf (each channel through mean ± 3 sd) and weighted rrf;
- relevance.py: the logistic of the dense cosine and the lexical coverage, and the window of candidates whose
  best evidence the query's relevance is;
- places.py: one result per place, a part lifted among the first places;
- facets.py: which version and language a question is answered from when it names none (the newest version;
  Japanese pages for a question in Japanese script), and a page's place in every version.

The shared text rules (fold, romaji with its `nn` rule, numerals) are text/'s (text/ja.py, text/romaji.py with
its table knowledge_build/data/romaji.json), reaching the box and the database as data in the same way.
This package imports nothing of index/, search/, store/ or browser/: they read it.
"""
