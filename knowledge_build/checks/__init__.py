"""What an author or CI checks about a site and its index: the anchor lint and id write-back
(lint.py), the index against the HTML (validate.py), and the HTML coverage report (report.py).
"""
