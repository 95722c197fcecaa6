"""Judging: the first grade of every answer, by the judge or by a rule in its place.

The judge reads an answer in one of two modes (``modes``: label probabilities per check, or a
generated JSON verdict), on prompts laid out for the prefix cache (``prompts``), batch-first;
the judge's budget (``budget``) gives an answer it does not read a grade split by key-point
coverage. Answers that score 0 by rule (blank, off topic, an injection alone) or cannot be
scored get their grade here too (``rule_grades``). Every grade leaves this stage with the parts
later steps keep: checked evidence, review reasons, feedback, provenance.
"""
