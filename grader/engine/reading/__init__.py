"""Reading, by rule and without a model: what the rubric asks and what an answer is.

Rubric files and rubrics derived from a reference answer, the conclusion a question's answer
must reach and how an answer's conclusion reads (verdicts, values, formulas, big-O, choices),
objective answers graded exactly, blank answers and non-answers, and answers that try to
steer the judge (found, flagged and cut out). Every later stage reads what this one found.
"""
