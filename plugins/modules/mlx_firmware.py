#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: mlx_firmware
short_description: Burn pinned firmware per PSID on NVIDIA ConnectX/BlueField devices (flint / mstflint)
version_added: 0.1.0
description:
  - Brings every selected NVIDIA NIC or DPU to the firmware version pinned for its PSID in O(images), with C(flint)
    from NVIDIA Firmware Tools or C(mstflint) from the mstflint package.
  - Reads each device with ONE C(flint -d DEV q) (PSID, burned C(FW Version), running "FW Version(Running)"),
    finds the image for the device's PSID (or, for a cross-flash, an image listing that PSID in
    O(images[].from_psids)), and burns only devices whose burned version differs from the target.
  - Before anything is burned on any device, every image that will be burned is verified once - its sha256,
    computed on the managed host, and the PSID and FW version C(flint -i IMAGE q) reads from the file must equal
    the O(images) entry. Any mismatch refuses the whole task.
  - Downgrades are refused unless O(allow_downgrade=true); PSID changes unless O(allow_psid_change=true). A
    refusal on any device fails the task before any device is burned.
  - All devices of the host are burned at once, one C(flint) process each (C(mlxfwmanager) would burn them one
    after another). Each burned device is queried again to prove the flash holds the target version.
  - New firmware runs after a firmware reset or reboot; RV(devices[].pending_reset) says so, also when a burn of an
    earlier run has not been activated yet. Activate with M(gpufabric.mlnx.mlx_fwreset) or a reboot.
  - A device whose PSID no image covers is reported as RV(devices[].action=skipped) with a reason, unless
    O(require_image=true).
  - With O(matrix) the task decides per card from the version matrix itself (the P(gpufabric.mlnx.fw_targets#filter)
    decision - burn, nothing, pending activation, or refused with the reason), refuses the host before anything is
    burned or fetched when a card is refused, burns only the cards to burn with the images of their PSIDs (under
    O(firmware_dir)), and returns which cards wait for an activation as RV(ansible_facts) - what the
    P(gpufabric.mlnx.firmware#role) role runs as its one task. A host with nothing to burn costs no module run
    when O(nic_devices) is given.
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
  - gpufabric.mlnx._attributes.tools
attributes:
  check_mode:
    details: Reads the devices and verifies the images (checksum and C(flint -i IMAGE q)), burns nothing.
  diff_mode:
    details: Before and after burned firmware version per device.
options:
  images:
    description:
      - The firmware pinned per PSID. Each device gets the image whose O(images[].psid) equals its PSID.
      - Only images that some device will be burned with are verified and need to be present on the host; a host
        already on the pinned versions needs no image file.
      - Required unless O(matrix) is given (the images are then the matrix's, under O(firmware_dir)).
    type: list
    elements: dict
    suboptions:
      psid:
        description:
          - The PSID of the image (and of the devices it is for), as C(flint q) prints it, for example
            V(MT_0000000838). Case-insensitive.
        type: str
        required: true
      version:
        description:
          - The FW version inside the image, three numbers (family, minor, sub-minor) as flint prints it, for example
            V(28.43.1014); another form (V(28.43), V(28.43.1014.1)) is refused before any tool runs. Versions compare
            as numbers, part by part.
        type: str
        required: true
      path:
        description:
          - The image file on the managed host, a path ending in C(.bin) (what C(flint -i) burns); a C(.zip) as NVIDIA
            serves it, or a directory, is refused before any tool runs.
        type: path
        required: true
      sha256:
        description:
          - The sha256 of the image file, 64 hex digits (a V(sha256:) prefix is accepted).
        type: str
        required: true
      part_numbers:
        description:
          - Board part numbers the image is valid for (an C(_Ax) revision suffix is ignored). When given, a device
            whose part number (from C(flint q), else the PCI VPD) is not listed does not get this image.
          - Each letters, digits and C(-) with an optional C(_Ax) suffix (V(MCX75310AAS-NEAT), V(900-9D3B6-00CV-AA0));
            an empty or other value is refused before any tool runs.
        type: list
        elements: str
      from_psids:
        description:
          - Device PSIDs this image may replace (a cross-flash, for example an OEM PSID to the NVIDIA one).
          - Burning such a device changes its PSID and needs O(allow_psid_change=true).
        type: list
        elements: str
      copy_from:
        description:
          - A copy of the image on the host (a shared file system, or the copy O(src) sent, which sets this). When a
            device is burned with this image, the copy is verified and put at O(images[].path) if that file is
            missing or differs.
        type: path
  src:
    description:
      - A folder on the Ansible controller holding the image files (relative paths are looked up in a role's or
        playbook's C(files/), as with M(ansible.builtin.copy)). The file of each O(images) entry is
        C(src/<file name of its path>); the task sends every image to the host with the module, verifies the copy
        and puts it at O(images[].path) (folder created 0750, file 0640) when that file is missing or differs -
        only for images some device is burned with, never in check mode.
      - Without it the images must already be on the host at O(images[].path).
      - Every listed image is sent on every run of the task, so list only the images of the PSIDs to burn, as the
        P(gpufabric.mlnx.firmware#role) role does.
    type: path
  device:
    description:
      - Devices to update. Each is a PCI address (V(18:00.0) or V(0000:18:00.0) - bus, device 00-1f, function 0-7),
        an RDMA device name (V(mlx5_0); passed to the tool as written), an MST device path (V(/dev/mst/mt4129_pciconf0);
        MFT only), or V(all) for function 0 of every NVIDIA card; anything else is refused before any tool runs.
      - Both functions of a card share one flash; a card is burned once even when both are named.
    type: list
    elements: str
    default: [all]
    aliases: [devices]
  allow_downgrade:
    description:
      - Burn an image older than the firmware on the flash. Without it such a device fails the task before any burn.
    type: bool
    default: false
  allow_psid_change:
    description:
      - Burn an image listed for the device's PSID in O(images[].from_psids), changing the PSID (passes
        C(--allow_psid_change) to flint). Without it such a device fails the task before any burn.
    type: bool
    default: false
  require_image:
    description:
      - Fail (before any burn) when a selected device's PSID has no image, naming the device, its PSID and the
        PSIDs the images cover. Without it such a device is reported as skipped.
    type: bool
    default: false
  verify_only:
    description:
      - Only verify every image of O(images) at its O(images[].path) - present, sha256, and the PSID and FW version
        C(flint -i IMAGE q) reads from the file - and return every problem of every image in RV(image_problems)
        without failing; no device is read and nothing is burned or copied.
      - The P(gpufabric.mlnx.firmware#role) role's C(images) tasks run it once on the controller
        (delegated to localhost) for the preflight and C(playbooks/check_inventory.yml); the controller then needs
        MFT or mstflint, else the PSID and version cannot be read and a problem says so.
    type: bool
    default: false
  matrix:
    description:
      - The version matrix (C(gpufabric_matrix), docs/matrix.md); its C(firmware) part is used. Per card (function
        0 of each) the action is decided as P(gpufabric.mlnx.fw_targets#filter) decides it - V(burn) (older than
        the pin, or a downgrade the PSID's C(allow_downgrade) permits), V(none), V(pending) (the pin is burned,
        another version runs) or V(refused) (unknown PSID, a part number the image is not for, a downgrade the
        matrix does not allow, firmware that could not be read).
      - A refused card fails the task before anything is fetched or burned, naming the host, each card and why
        (RV(targets)). Otherwise only the cards to burn are burned (O(device), O(allow_downgrade) and O(images) are
        decided from the matrix and must not be given), and RV(ansible_facts) says which cards wait for an
        activation.
    type: dict
  firmware_dir:
    description:
      - With O(matrix), the folder on the host that holds (or receives) the matrix's images, C(<firmware_dir>/<image>).
    type: path
    default: /var/lib/gpufabric/firmware
  nic_devices:
    description:
      - With O(matrix), the host's NVIDIA devices as M(gpufabric.mlnx.mlx_info) returns them (RV(gpufabric.mlnx.mlx_info#module:devices);
        the preflight's C(gpufabric_nic_devices)). Not given - the task reads them first, as M(gpufabric.mlnx.mlx_info)
        does.
    type: list
    elements: dict
  mirror:
    description:
      - With O(matrix), an HTTP mirror of the images, its base URL (the firmware role's C(gpufabric_firmware_mirror)) -
        only when a card is to be burned, each image of the PSIDs to burn is fetched on the host from
        C(<mirror>/<image>) into O(firmware_dir) (folder created 0755, file 0644, owner root) by
        M(ansible.builtin.get_url) with the sha256 the matrix pins, before anything is burned; an image that does
        not arrive or has another sha256 fails the task naming the image, the URL and both checksums, nothing is
        burned and the file is not kept. O(src) is not used then.
      - An http:// or https:// URL of ASCII letters, digits and C(. _ ~ % + -) (P(gpufabric.mlnx.mirror_downloads#filter));
        anything else fails naming the host and the variable. Empty - no mirror.
    type: str
    default: ""
  mirror_timeout:
    description: Seconds one request to O(mirror) may take.
    type: int
    default: 60
notes:
  - Images are verified on the managed host, as sent with O(src) or already there.
  - O(matrix) with O(src) or O(mirror) is decided on the controller by the task's action (from O(nic_devices), or
    after reading the host's devices) before an image is sent or fetched; the module is run only to burn.
  - The burn runs C(flint -d DEV -i IMAGE -y burn); a burn that fails on one device does not stop the others,
    the task fails at the end listing RV(failed_devices).
seealso:
  - module: gpufabric.mlnx.mlx_info
  - module: gpufabric.mlnx.mlxconfig
  - name: flint - Firmware Burning Tool (NVIDIA MFT documentation)
    description: The tool this module runs and its options.
    link: https://docs.nvidia.com/networking/display/mftv43106021/flint+%E2%80%93+firmware+burning+tool
"""

EXAMPLES = r"""
- name: Pin ConnectX-7 firmware on every card
  gpufabric.mlnx.mlx_firmware:
    images:
      - psid: MT_0000000838
        version: 28.43.1014
        path: /var/cache/gpufabric/fw-ConnectX7-rel-28_43_1014-MCX75310AAS-NEA_Ax.bin
        sha256: 3f1c0d5e9a7b2c4d6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d
        part_numbers: [MCX75310AAS-NEAT]
  register: fw

- name: Which devices need a reset to run the new firmware
  ansible.builtin.debug:
    msg: "{{ fw.devices | selectattr('pending_reset') | map(attribute='device') | list }}"

- name: Cross-flash Dell OEM ConnectX-6 Dx to the NVIDIA PSID, with the inbox mstflint tools
  gpufabric.mlnx.mlx_firmware:
    tool: mstflint
    device: ["0000:3b:00.0"]
    allow_psid_change: true
    require_image: true
    images:
      - psid: MT_0000000359
        version: 22.43.1014
        path: /var/cache/gpufabric/fw-ConnectX6Dx-rel-22_43_1014.bin
        sha256: "sha256:9b1e2d3c4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c"
        from_psids: [DEL0000000027]
"""

RETURN = r"""
devices:
  description: One entry per device (function 0 of each card), in the order selected.
  returned: always
  type: list
  elements: dict
  contains:
    device:
      description: The device as passed to flint (full PCI address when given as one).
      type: str
      sample: "0000:18:00.0"
    psid:
      description: The device's PSID before the task.
      type: str
      sample: MT_0000000838
    part_number:
      description: The board part number, from C(flint q) or the PCI VPD, when known.
      type: str
      returned: when known
      sample: MCX75310AAS-NEAT
    image:
      description: Path of the image chosen for the device; null when skipped.
      type: str
      sample: /var/cache/gpufabric/fw-ConnectX7-rel-28_43_1014.bin
    target_version:
      description: The FW version pinned for the device; null when skipped.
      type: str
      sample: 28.43.1014
    before:
      description: Burned (on flash) and running FW versions before the task.
      type: dict
      sample: {burned: 28.39.1002, running: 28.39.1002}
    after:
      description: Burned and running FW versions after the task, re-read from the device after a burn (in check
        mode, the versions a burn would leave).
      type: dict
      sample: {burned: 28.43.1014, running: 28.39.1002}
    changed:
      description: Whether the device was (in check mode, would be) burned.
      type: bool
    action:
      description: V(burn) (burned, or would be in check mode), V(none) (already on the target), V(skipped) (no image).
      type: str
      sample: burn
    reason:
      description: Why a device was skipped.
      type: str
      returned: when skipped
      sample: no image for PSID MT_0000000575 (the images cover MT_0000000838)
    psid_change:
      description: The PSID change of a cross-flash.
      type: dict
      returned: when the burn changes the PSID
      sample: {from: DEL0000000027, to: MT_0000000359}
    pending_reset:
      description: True when the running firmware differs from the burned one (a firmware reset or reboot is needed).
      type: bool
    image_staged:
      description:
        - V(false) in check mode when the image file is not on the host yet (a role stages it only in a real run);
          the image is verified before the real burn.
      type: bool
      returned: in check mode, when the image file is missing
msg:
  description: What was burned (in check mode, would be), which devices wait for a reset, which were skipped.
  returned: always
  type: str
  sample: burned 0000:18:00.0 28.39.1002 -> 28.43.1014; reset pending on 0000:18:00.0
pending_reset:
  description: True when any device needs a firmware reset or reboot to run its burned firmware.
  returned: always
  type: bool
images_installed:
  description: The image paths written on the host from the copies sent with O(src) (missing or different before).
  returned: always
  type: list
  elements: str
  sample: [/var/lib/gpufabric/firmware/fw-ConnectX7-rel-28_43_1014.bin]
image_problems:
  description: With O(verify_only), every problem of every image (empty when all are good).
  returned: when O(verify_only=true)
  type: list
  elements: str
  sample:
    - "images[0] (PSID MT_0000000838, version 28.43.2566, /srv/fw/cx7.bin): /srv/fw/cx7.bin is not a file on this host"
targets:
  description:
    - With O(matrix), the decision per card, as P(gpufabric.mlnx.fw_targets#filter) returns it (C(address),
      C(psid), C(part_number), C(current), C(target), C(action) V(burn), V(none), V(pending) or V(refused),
      C(reason), C(downgrade)).
  returned: when O(matrix) is given
  type: list
  elements: dict
  sample:
    - {address: "0000:18:00.0", card: "0000:18:00", psid: MT_0000000838, part_number: MCX75310AAS-NEAT,
       current: {burned: 28.42.1000, running: 28.42.1000}, action: burn, reason: 28.42.1000 -> 28.43.2566,
       target: {version: 28.43.2566, image: fw-ConnectX7.bin, sha256: 92a5...}, downgrade: false}
images_fetched:
  description: With O(mirror), the images fetched from the mirror into O(firmware_dir) (missing or different before).
  returned: when O(mirror) is set and a card is burned
  type: list
  elements: str
  sample: [/var/lib/gpufabric/firmware/fw-ConnectX7-rel-28_43_1014.bin]
ansible_facts:
  description: With O(matrix), the facts the P(gpufabric.mlnx.activate#role) role reads (docs/role_facts.md).
  returned: when O(matrix) is given and the task succeeds
  type: dict
  contains:
    gpufabric_firmware_pending_devices:
      description:
        - PCI addresses of the cards whose burned firmware waits for an activation - burned now (in check mode,
          would be) or earlier and not activated since.
      type: list
      elements: str
      sample: ["0000:18:00.0"]
    gpufabric_firmware_pending_reset:
      description: At least one card waits for an activation of its firmware.
      type: bool
failed_devices:
  description: Devices whose burn failed, with the tool's words (rc and C(-E-) lines).
  returned: when a device failed
  type: dict
  sample: {"0000:18:00.0": "0000:18:00.0: burning 28.39.1002 -> 28.43.1014 failed: ... rc 1: Burning FW image failed"}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices as devices_
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _firmware as firmware
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _matrix as matrix_
from ansible_collections.gpufabric.mlnx.plugins.module_utils._info import gather
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import TOOL_ARGSPEC, Runner

IMAGE_SPEC = dict(
    psid=dict(type="str", required=True),
    version=dict(type="str", required=True),
    path=dict(type="path", required=True),
    sha256=dict(type="str", required=True),
    part_numbers=dict(type="list", elements="str"),
    from_psids=dict(type="list", elements="str"),
    copy_from=dict(type="path"),
)


def main():
    module = ansible_module(
        AnsibleModule,
        argument_spec=dict(
            images=dict(type="list", elements="dict", options=IMAGE_SPEC),
            matrix=dict(type="dict"),
            firmware_dir=dict(type="path", default="/var/lib/gpufabric/firmware"),
            nic_devices=dict(type="list", elements="dict"),
            mirror=dict(type="str", default=""),
            mirror_timeout=dict(type="int", default=60),
            device=dict(type="list", elements="str", default=["all"], aliases=["devices"]),
            allow_downgrade=dict(type="bool", default=False),
            allow_psid_change=dict(type="bool", default=False),
            require_image=dict(type="bool", default=False),
            src=dict(type="path"),
            verify_only=dict(type="bool", default=False),
            **TOOL_ARGSPEC
        ),
        required_one_of=[("images", "matrix")],
        mutually_exclusive=[("images", "matrix")],
        supports_check_mode=True,
    )
    params = module.params
    plan = None
    try:
        runner = Runner(tool=params["tool"], timeout=params["timeout"])
        if params["matrix"] is not None:
            plan = _matrix_plan(module, runner)
        images = firmware.normalize_images(params["images"] if plan is None else plan["images"])
        devices_.check_names(params["device"])   # before any tool runs
        devices_.check_tool(params["device"], runner)
        if params["verify_only"]:
            module.exit_json(changed=False, image_problems=firmware.images_problems(runner, images),
                             msg="%d image(s) verified" % len(images))
        found = None
        if devices_.needs_discovery(params["device"], None) or any(im["part_numbers"] for im in images):
            found = devices_.discover(runner)
        selected = firmware.one_per_card(devices_.select(params["device"] if plan is None else plan["burn"], None, found))
        installed = []
        results = firmware.converge(
            runner, selected, images, check_mode=module.check_mode,
            allow_downgrade=params["allow_downgrade"] if plan is None else plan["allow_downgrade"],
            allow_psid_change=params["allow_psid_change"], require_image=params["require_image"],
            part_numbers={d["address"]: d.get("part_number") for d in found or []},
            staged={im["path"]: im["copy_from"] for im in params["images"] or [] if im.get("copy_from")},
            installed=installed)
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())

    done = [res for _dev, res, err in results if err is None]
    failed = {dev: str(err) for dev, _res, err in results if err is not None}
    out = dict(
        changed=any(r["changed"] for r in done) or bool(installed),
        devices=done,
        pending_reset=any(r["pending_reset"] for r in done),
        images_installed=installed,
        diff=dict(before={r["device"]: r["before"]["burned"] for r in done},
                  after={r["device"]: r["after"]["burned"] for r in done}),
    )
    if plan is not None:
        out.update(targets=plan["targets"], ansible_facts=matrix_.firmware_pending(plan, done))
    if failed:
        out.pop("ansible_facts", None)
        module.fail_json(msg="firmware burn failed on %d of %d devices: %s"
                         % (len(failed), len(results), "; ".join(failed.values())), failed_devices=failed, **out)
    module.exit_json(msg=firmware.summary(done, check_mode=module.check_mode), **out)


def _matrix_plan(module, runner):
    """With ``matrix``: the cards decided from the matrix (the host's devices read here unless ``nic_devices`` are
    given); exits when a card is refused or nothing is to be burned, else the plan of the burn."""
    params = module.params
    for name in ("device", "allow_downgrade"):
        if params[name] != module.argument_spec[name]["default"]:
            raise MlnxError("%s is decided from matrix per card: leave it out" % name, parameter=name)
    if params["mirror"]:
        raise MlnxError("mirror is fetched by the task's action (run gpufabric.mlnx.mlx_firmware as a task, not as a "
                        "bare module)", parameter="mirror")
    found = params["nic_devices"]
    if found is None:
        found = gather(runner, host=runner.host)["devices"]
    plan = matrix_.firmware_plan(found, params["matrix"], params["firmware_dir"])
    if plan["refused"]:
        module.fail_json(msg=plan["refused"], targets=plan["targets"])
    if not plan["burn"]:
        module.exit_json(changed=False, devices=[], pending_reset=bool(plan["pending"]), images_installed=[],
                         targets=plan["targets"], ansible_facts=matrix_.firmware_pending(plan),
                         msg=matrix_.firmware_summary(plan))
    return plan


if __name__ == "__main__":
    main()
