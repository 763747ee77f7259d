"""Suite-wide settings.

Hypothesis' default 200 ms deadline per example is a wall-clock limit: with the machine's
cores busy an example that normally takes milliseconds can exceed it, and Hypothesis then
fails the test as flaky. No test in this suite may depend on wall-clock time, so the
deadline is off for every property test (tests that set their own settings inherit it).
"""
from hypothesis import settings

settings.register_profile("metaroce", deadline=None)
settings.load_profile("metaroce")
