"""The release, on the ground floor: provenance and the HTTP app name it without importing
the public API in ``grader/__init__``."""

__version__ = "0.1.0"
