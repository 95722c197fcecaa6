"""Exam papers into question banks: reading a paper's parts (``paper`` and the modules it uses),
letters and ✓/✗ marks (``marks``), and the bank files instructors edit (``files``)."""
