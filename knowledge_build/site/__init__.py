"""Reading a site as its generator built it: which pages there are and where (jekyll.py: a Jekyll
source folder or its built `_site`, front matter, `_data/`, permalinks), the scan of each page's
anchored knowledge boxes (scan.py), and the anchor-id rules and suggestions (ids.py).
"""
