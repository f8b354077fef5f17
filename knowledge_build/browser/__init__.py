"""The search box on the site itself: a static bundle the build writes beside the artifacts
(bundle.py), read in the browser by static/knowledge-search.js with the same analysis (analysis.py)."""
