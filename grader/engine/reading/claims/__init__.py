"""Reading what an answer claims, not what it is about.

A rubric names the claims its criteria turn on: the decisive parts an answer must assert for
a criterion's points to count as verified, and the wrong claims that cost points. Rules read
them first (terms in one clause, directions, values with units, negation scope); what rules
cannot decide is left ``undecided`` for a claim reader (a judge's paired yes/no contrast).
"""
