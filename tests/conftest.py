"""Test-suite configuration shared by every directory: the Hypothesis profile.

The property-based tests (``tests/protocol/test_properties_*.py``) run under the
``mcpkit`` profile: 200 examples a test, bounded so the whole property suite stays fast
on a shared CI machine; no deadline (a busy machine is not a failure); fresh examples
every run, and a failure prints the ``@reproduce_failure`` blob that replays it; no
example database (nothing is written into the work tree). For a longer local hunt:
``pytest --hypothesis-profile=mcpkit-thorough tests/protocol``.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile(
    "mcpkit",
    max_examples=200,
    deadline=None,
    derandomize=False,
    print_blob=True,
    database=None,
)
settings.register_profile(
    "mcpkit-thorough", parent=settings.get_profile("mcpkit"), max_examples=5000
)
settings.load_profile("mcpkit")
