"""Signals: what an answer's wording and meaning say beside it, before any judge reads it.

Embeddings against the reference, the key points and unrelated text (``analysis``), answer
groups and near-duplicates among classmates (``cohort``; ``copies`` confirms a copy by its
wording), the anchors shown with an answer, the graded answers that serve as neighbours, and
key-point coverage by wording alone. The integrity report is built from the same pairs.
"""
