"""The scorer core: the one place the scorer's rules live.

Grading (``grader.engine.scoring``), re-scoring (``grader.engine.rescoring``), the default
fit (``grader.calibrate.scorer_fit``) and an instructor's refit (``grader.calibrate.refit``)
all read an answer into one ``reading.Reading`` (its features, the graded copies of its
text, its nearest graded answers) and let ``rules.decide`` score it. Which graded answers
may be neighbours and which are copies is ``rules.graded_split``; nothing else writes those
rules again (``tests/unit/test_layout.py`` keeps it so).

Nothing is imported here: ``grader.engine.features`` uses the rules, and the reading uses
its graded pool.
"""
