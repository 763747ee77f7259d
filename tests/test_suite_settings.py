"""Suite reliability (issue 7 item 7): nothing in the default run depends on wall-clock time."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def test_hypothesis_has_no_deadline():
    """tests/conftest.py turns Hypothesis' 200 ms per-example deadline and its data
    generation speed check off, also for tests that set other settings of their own."""
    assert settings.default.deadline is None
    assert settings(max_examples=5).deadline is None
    assert HealthCheck.too_slow in settings(max_examples=5).suppress_health_check


@settings(max_examples=3)
@given(st.integers())
def test_a_property_test_runs_without_deadline(n):
    import time
    time.sleep(0.3)         # longer than Hypothesis' default deadline: must not fail
    assert isinstance(n, int)
