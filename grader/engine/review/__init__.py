"""Review: which finished grades a person should look at, and which answers to grade first.

Each question's grades ranked by expected error within a budget, plus every grade with a hard
reason (``queue``); the answers an instructor grades by hand first (``suggest``).
"""
