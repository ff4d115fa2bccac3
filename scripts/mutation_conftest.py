"""pytest settings of a mutation run only (scripts/mutation.sh copies this file in as the
root conftest.py of each group's working copy).

mutmut runs the same tests several times in one process (stats, the clean run, then a
forked child per mutant): Hypothesis then sees a test method called on different
instances (``differing_executors``). Examples are derandomised and the example database
is off, so that a mutant's verdict does not depend on a seed or on an earlier run.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "mutation",
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.differing_executors],
)
settings.load_profile("mutation")
