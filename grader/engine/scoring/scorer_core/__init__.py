"""The scorer core: the one place the scorer's rules live.

Grading (``grader.engine.scoring.scorer_grade``), re-scoring (``grader.engine.finish.rescored``), the default
fit (``grader.calibrate.scorer_fit``) and an instructor's refit (``grader.calibrate.refit``)
all read an answer into one ``inputs.ScorerInput`` (its features, the graded copies of its
text, its nearest graded answers) and let ``rules.decide`` score it. Which graded answers
may be neighbours and which are copies is ``rules.graded_split``; ``pool.GradedPool`` holds
a question's graded answers and ``pool.read_answer`` reads an answer against them. Nothing
else writes these rules again (``tests/unit/test_layout.py`` keeps it so). The fits' one
fold split and one fitter live on the calibration floor (``scorer_cv.question_split``,
``scorer_fit.fit_model``), which may import the engine but not the other way round.

Nothing is imported here, so importing one module loads only what it needs.
"""
