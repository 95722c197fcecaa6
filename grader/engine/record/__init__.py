"""The record read back: a finished grade explained as a person reads it.

Each criterion's points and the sentence that earned them, then the grade's trail: where its
score came from and every step that moved it (``explain``, behind ``grader explain``).
"""
