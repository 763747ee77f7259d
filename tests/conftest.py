"""Suite-wide settings.

Two Hypothesis checks are wall-clock limits: the 200 ms deadline per example, and the
``too_slow`` health check on data generation. With the machine's cores busy an example that
normally takes milliseconds can exceed either, and Hypothesis then fails the test. No test in
this suite may depend on wall-clock time, so both are off for every property test (tests
that set their own settings inherit this profile).
"""
from hypothesis import HealthCheck, settings

settings.register_profile("metaroce", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("metaroce")
