"""Jobs for the gateway's worker processes that the test controls (`Checker.job`).

They run in another process, so they talk to the test through files: `held` says it started
by creating `started`, then waits until the test creates `release` before doing the real
check. With no `release` ever made it is a job that never ends on its own.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from outform.gateway.checks import Verdict, check_reply


def held(release: str, started: str, *args: Any) -> Verdict:
    Path(started).touch()
    while not Path(release).exists():
        time.sleep(0.005)
    return check_reply(*args)
