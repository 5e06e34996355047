"""A plugin that must never be imported when blocked: importing it is detectable."""

import os

os.environ["NODEHOST_FAKE_BLOCKED_IMPORTED"] = "1"
