"""Scoring: one calibrated score per judged answer, from the scorer core.

The scorer (``scorer_model``, fitted numbers in ``scorer_default.json`` or an exam's own file,
chosen in ``scorer_choice``) weighs the judge's reading against every signal (``features``) and
the question's graded answers; its rules live in one place (``scorer_core``). ``scorer_grade``
turns its share into the grade's score, criteria and confidence, in the half points of
``points``.
"""
