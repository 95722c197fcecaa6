"""The service's tables. Alembic migrations (``grader/migrations``) create them; a test checks
that migrating an empty database gives exactly this."""

import sqlalchemy as sa

metadata = sa.MetaData()

platforms = sa.Table(
    "platforms",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(100), nullable=False, unique=True),
    sa.Column("key_id", sa.String(32), nullable=False, unique=True),
    sa.Column("key_hash", sa.String(64), nullable=False),
    sa.Column("webhook_url", sa.String(2000)),
    sa.Column("webhook_secret", sa.String(100), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("removed_at", sa.DateTime),  # removed: its key no longer works (0004)
)

platform_exams = sa.Table(
    "platform_exams",
    metadata,
    sa.Column("platform_id", sa.ForeignKey("platforms.id"), primary_key=True),
    sa.Column("exam", sa.String(200), primary_key=True),
)

submissions = sa.Table(
    "submissions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("platform_id", sa.ForeignKey("platforms.id"), nullable=False),
    sa.Column("external_id", sa.String(200), nullable=False),
    sa.Column("exam", sa.String(200), nullable=False),
    sa.Column("question_id", sa.String(200), nullable=False),
    sa.Column("student", sa.String(200)),
    sa.Column("answer", sa.Text, nullable=False),
    sa.Column("body_hash", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # queued, graded, failed
    sa.Column("enqueued_at", sa.DateTime, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("graded_at", sa.DateTime),
    sa.Column("error", sa.Text),
    sa.UniqueConstraint("platform_id", "external_id", name="uq_submissions_platform_external"),
    sa.Index("ix_submissions_status_enqueued", "status", "enqueued_at"),
    sa.Index("ix_submissions_platform_exam", "platform_id", "exam"),
    # the instructor pages count and page an exam's answers per question (0006)
    sa.Index("ix_submissions_exam_question", "exam", "question_id", "id"),
    sa.Index("ix_submissions_platform_status", "platform_id", "status"),  # quotas (0005)
)

grades = sa.Table(
    "grades",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("submission_id", sa.ForeignKey("submissions.id"), nullable=False),
    sa.Column("rubric_version", sa.String(64), nullable=False),  # "" for objective questions
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("score", sa.Float),
    sa.Column("needs_review", sa.Boolean, nullable=False),
    sa.Column("judge_latency_s", sa.Float),
    sa.Column("record", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("submission_id", "rubric_version", name="uq_grades_submission_rubric"),
)

review_queue = sa.Table(
    "review_queue",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("submission_id", sa.ForeignKey("submissions.id"), nullable=False),
    sa.Column("rubric_version", sa.String(64), nullable=False),
    sa.Column("reasons", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("resolved_at", sa.DateTime),
    sa.Column("resolved_by", sa.String(100)),  # the instructor who reviewed it (0002)
    sa.UniqueConstraint("submission_id", "rubric_version", name="uq_review_submission_rubric"),
)

webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("platform_id", sa.ForeignKey("platforms.id"), nullable=False),
    sa.Column("submission_id", sa.ForeignKey("submissions.id"), nullable=False),
    sa.Column("event", sa.String(50), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # pending, delivered, failed
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", sa.DateTime, nullable=False),
    sa.Column("last_error", sa.Text),
    sa.Column("delivered_at", sa.DateTime),
    sa.Column("created_at", sa.DateTime, nullable=False),
    # the grade version it announces (0007): one delivery per version, several per submission
    sa.Column("version_id", sa.ForeignKey("grade_versions.id")),
    sa.UniqueConstraint("version_id", name="uq_deliveries_version"),
    sa.Index("ix_deliveries_status_next", "status", "next_attempt_at"),
    sa.Index("ix_deliveries_submission", "submission_id", "id"),
)

dead_letters = sa.Table(
    "dead_letters",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("task", sa.String(200), nullable=False),
    sa.Column("submission_ids", sa.JSON, nullable=False),
    sa.Column("error", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

# --- instructors (migration 0002) ----------------------------------------------------------

instructors = sa.Table(
    "instructors",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(100), nullable=False, unique=True),
    sa.Column("key_id", sa.String(32), nullable=False, unique=True),
    sa.Column("key_hash", sa.String(64), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    # 0004: a session cookie carries the generation it was made in; logout and removal bump it
    sa.Column("session_generation", sa.Integer, nullable=False, server_default="0"),
    sa.Column("removed_at", sa.DateTime),
)

instructor_exams = sa.Table(
    "instructor_exams",
    metadata,
    sa.Column("instructor_id", sa.ForeignKey("instructors.id"), primary_key=True),
    sa.Column("exam", sa.String(200), primary_key=True),
)

human_scores = sa.Table(
    "human_scores",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("submission_id", sa.ForeignKey("submissions.id"), nullable=False),
    sa.Column("instructor_id", sa.ForeignKey("instructors.id"), nullable=False),
    sa.Column("score", sa.Float, nullable=False),
    sa.Column("criteria", sa.JSON),  # criterion id -> points, or null: a total only
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("submission_id", "instructor_id", name="uq_human_submission_instructor"),
)

grade_overrides = sa.Table(
    "grade_overrides",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("submission_id", sa.ForeignKey("submissions.id"), nullable=False),
    sa.Column("score", sa.Float, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("instructor", sa.String(100), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Index("ix_overrides_submission", "submission_id"),
)

service_secrets = sa.Table(
    "service_secrets",
    metadata,
    sa.Column("name", sa.String(100), primary_key=True),
    sa.Column("value", sa.String(200), nullable=False),
)

# --- exam scorers (migration 0003) ---------------------------------------------------------

exam_scorers = sa.Table(
    "exam_scorers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("exam", sa.String(200), nullable=False),
    sa.Column("version", sa.String(64), nullable=False),  # the file's content hash
    sa.Column("scorer", sa.Text, nullable=False),  # the scorer file's text, as written
    sa.Column("report", sa.JSON, nullable=False),  # the refit's before/after agreement
    sa.Column("created_by", sa.String(100), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("applied_at", sa.DateTime),  # null: proposed, not applied; newest applied grades
    sa.Column("applied_by", sa.String(100)),
    sa.UniqueConstraint("exam", "version", name="uq_exam_scorers_exam_version"),
    sa.Index("ix_exam_scorers_exam_applied", "exam", "applied_at"),
)

# --- quotas (migration 0005) ---------------------------------------------------------------

rate_counters = sa.Table(
    "rate_counters",
    metadata,
    sa.Column("bucket", sa.String(200), primary_key=True),  # "key:<key id>", "login:<address>"
    sa.Column("window_start", sa.BigInteger, primary_key=True),  # unix seconds
    sa.Column("count", sa.Integer, nullable=False),
    sa.Index("ix_rate_counters_window", "window_start"),
)

# --- grade versions (migration 0007) -------------------------------------------------------

grade_versions = sa.Table(
    "grade_versions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),  # the platforms' change cursor
    sa.Column("submission_id", sa.ForeignKey("submissions.id"), nullable=False),
    sa.Column("platform_id", sa.ForeignKey("platforms.id"), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),  # 1, 2, ... per submission
    # engine, override, score, regrade, refit, rubric: what changed the grade
    sa.Column("cause", sa.String(32), nullable=False),
    sa.Column("actor", sa.String(100)),  # the instructor, or null for the engine
    sa.Column("rubric_version", sa.String(64)),
    sa.Column("previous_status", sa.String(16)),
    sa.Column("previous_score", sa.Float),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("score", sa.Float),
    sa.Column("record", sa.JSON, nullable=False),  # the grade as its platform sees it
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("submission_id", "version", name="uq_grade_versions_submission"),
    sa.Index("ix_grade_versions_platform", "platform_id", "id"),
)

# --- rubric versions and regrades (migration 0008) -----------------------------------------

rubric_versions = sa.Table(
    "rubric_versions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),  # the newest row of a question is its rubric
    sa.Column("exam", sa.String(200), nullable=False),
    sa.Column("question_id", sa.String(200), nullable=False),
    sa.Column("version", sa.String(64), nullable=False),  # the rubric's content hash
    sa.Column("rubric", sa.JSON, nullable=False),
    sa.Column("note", sa.Text),  # what the edit was
    sa.Column("created_by", sa.String(100), nullable=False),  # an instructor, or "file"
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Index("ix_rubric_versions_exam", "exam", "question_id", "id"),
)

regrade_jobs = sa.Table(
    "regrade_jobs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("exam", sa.String(200), nullable=False),
    sa.Column("question_id", sa.String(200), nullable=False),
    sa.Column("rubric_version", sa.String(64), nullable=False),  # the version regraded against
    sa.Column("status", sa.String(16), nullable=False),  # pending, running, done, failed
    sa.Column("total", sa.Integer, nullable=False),
    sa.Column("done", sa.Integer, nullable=False),
    sa.Column("changed", sa.Integer, nullable=False),
    sa.Column("before", sa.JSON, nullable=False),  # submission id -> grade row id it replaces
    sa.Column("error", sa.Text),
    sa.Column("created_by", sa.String(100), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("claimed_at", sa.DateTime),  # a grading process took it (claims expire)
    sa.Column("finished_at", sa.DateTime),
    sa.Index("ix_regrade_jobs_status", "status", "id"),
    sa.Index("ix_regrade_jobs_exam", "exam", "question_id", "id"),
)
