"""Measuring retrieval: labelled query sets, hit@k, MRR, nDCG, latency and the regression gate
(evaluate.py); SQuAD-format data (JSQuAD) turned into pages and queries (squad.py).
"""
