"""Test settings shared by every test module."""

import os

from hypothesis import settings

# In CI, hypothesis draws the same examples every run, so main stays green unless the code changes;
# locally it explores anew each time (that is where new counterexamples are found).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")
