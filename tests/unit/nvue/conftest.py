# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures of the NVUE emulator tests: a switch = a temporary state + nvued on 127.0.0.1:<ephemeral>."""
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for extra in (HERE, HERE.parent.parent / "nvue"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from nvue_helpers import Switch  # noqa: E402


@pytest.fixture
def make_switch(tmp_path):
    """make_switch(hostname='leaf01', **init options) -> a started Switch (stopped at the end)."""
    made = []

    def make(hostname="leaf01", start=True, **kwargs):
        sw = Switch(tmp_path / ("%s-%d" % (hostname, len(made))), hostname, **kwargs)
        made.append(sw)
        if start:
            sw.start()
        return sw
    yield make
    for sw in made:
        sw.stop()


@pytest.fixture
def switch(make_switch):
    return make_switch()
