"""Finishing: the one place the final score is decided, after the judge (``final.finish``).

The scorer's grade, then the substance rules (a restated question capped, known wrong claims
deducted), the conclusion's cap, and the injection bound (the lower of the raw and the cleaned
answer's grades), each move on the grade's trail. Grading and re-scoring (``rescored``) alike
finish a grade here, so a re-scored grade is bound exactly as a fresh one.
"""
