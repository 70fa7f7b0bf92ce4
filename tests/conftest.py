"""Test-wide settings: Hypothesis runs are derandomized (the same examples every run, so a
red CI is reproducible), without deadlines (timing is not what these tests judge) and
without an example database (nothing written into the working tree)."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "flinkspec",
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("flinkspec")
