"""Exam reports with item analysis, and gradebook exports (wide and long, CSV and xlsx).

``scores`` turns grades into one student × question table with the rules for missing and
unscored answers; ``items`` computes classical test theory statistics on it; ``summary``
gathers the report's figures, ``plots`` and ``exam_report`` draw and write them; ``exports``
writes gradebooks. Import the submodules: this package imports nothing heavy by itself.
"""
