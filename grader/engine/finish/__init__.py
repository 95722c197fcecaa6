"""Finishing: what decides the final score after the scorer.

The substance rules (a restated question capped, known wrong claims deducted), the
conclusion's cap, the injection bound (the lower of the raw and the cleaned answer's grades),
and re-scoring a stored grade with another scorer.
"""
