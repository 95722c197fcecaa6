"""File formats grader reads and writes: submissions JSONL in, grades JSONL out (resumable),
and the YAML instructors edit (banks, rubrics), each with errors that name the file and line."""
