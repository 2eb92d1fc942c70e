"""The modules' core against the REAL mstflint tools (Debian's mstflint package) on a host
that has no NVIDIA card: the real error text and exit code must reach the user unchanged.
Skipped where the package is not installed (`make unit` installs it)."""
import shutil

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _firmware
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import ToolFailed
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import converge
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner

pytestmark = pytest.mark.skipif(not shutil.which("mstconfig", path="/usr/bin:/usr/sbin"),
                                reason="Debian's mstflint package is not installed")

DEV = "0000:18:00.0"


def real_runner():
    # Only the system directories: the simulator must not stand in for the real tool here.
    return Runner("mstflint", which=lambda name: shutil.which(name, path="/usr/bin:/usr/sbin"))


def test_mstconfig_failed_to_open_the_device():
    with pytest.raises(ToolFailed) as err:
        converge(real_runner(), [DEV], {"SRIOV_EN": True})
    assert err.value.rc == 3
    assert err.value.cmd == ["/usr/bin/mstconfig", "-d", DEV, "-e", "q"]
    assert "Failed to open the device" in err.value.msg and DEV in err.value.msg


def test_mstflint_query_cannot_open_device():
    images = _firmware.normalize_images(
        [{"psid": "MT_0000000838", "version": "28.43.1014", "path": "/nonexistent.bin", "sha256": "0" * 64}])
    with pytest.raises(ToolFailed) as err:  # nothing can be decided, so nothing is burned
        _firmware.converge(real_runner(), [DEV], images)
    assert err.value.rc == 1 and err.value.cmd == ["/usr/bin/mstflint", "-d", DEV, "q"]
    assert "Cannot open Device: %s. No such file or directory. MFE_CR_ERROR" % DEV in err.value.msg
