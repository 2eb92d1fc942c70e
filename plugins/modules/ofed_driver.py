#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: ofed_driver
short_description: Install the pinned NVIDIA NIC driver (DOCA-OFED / MLNX_OFED) and check it has mlx5 modules for the kernels the host runs and boots
version_added: 0.1.0
description:
  - Reads what the host runs - C(ofed_info -s) and the package manager's versions of the pinned packages
    (C(dpkg-query) or C(rpm -q)) - and compares it with O(driver), the C(driver) entry of C(gpufabric_matrix).
    When both agree with the matrix nothing is done.
  - Otherwise decides what to do - V(install), V(upgrade), V(downgrade) or V(repair) (some packages or C(ofed_info)
    disagree) - and refuses a downgrade unless the matrix says C(allow_downgrade=true).
  - Before anything on the host changes it refuses a packaged (non-DKMS) driver that is not built for the running
    kernel or the default boot kernel (C(driver.kernels)), a tarball whose sha256 is not the matrix's, and - with
    O(probe=true) - a repository that cannot be reached or does not have every pinned version. The probe runs
    C(apt-get update) of that ONE repository into a private temporary directory (C(/etc/apt) and C(/var/lib/apt) are
    not touched) or C(dnf repoquery --repofrompath).
  - With O(state=present) (apt hosts) it updates the driver repository's index only (C(apt-get update) with that one
    sources file), installs every pinned package at its exact version with ONE C(apt-get install NAME=VERSION ...)
    (C(--allow-downgrades) only for an allowed downgrade), and reads back C(ofed_info -s) and C(dpkg-query) - both must
    now report the pinned versions.
  - With O(state=present) and O(state=verified) it then checks the kernel guard - the new driver has mlx5 modules for
    the running kernel and for the default boot kernel (a C(mlx5_core.ko) among the files of the pinned packages
    under C(/lib/modules/KERNEL/), or with C(driver.dkms) an C(installed) row of C(dkms status)) - and fails naming the
    kernel when not.
  - It never reboots, and restarts the driver only with O(state=pinned) (below). It reports RV(reboot_required) (a
    driver installed in this boot, recorded in O(state_dir), or a loaded C(mlx5_core) of another version) and, for
    O(restart_driver), whether a restart is safe (RV(restart)).
  - With O(state=query), O(state=present) and O(state=verified) the repository file and the apt preferences that pin
    the versions are written by the caller (filter P(gpufabric.mlnx.ofed_apt_files#filter)) before it installs.
  - O(state=pinned) is the C(gpufabric.mlnx.ofed) role's one task - everything above in one module run, with the
    role's facts returned as RV(ansible_facts). The repository is described from the matrix and O(repo_name),
    O(apt_format), O(keyring_dir) and O(apt_trusted) (unless O(repository) is given). After the same refusals, on an
    apt host it unpacks a tarball into O(bundle_dir) when an install needs it (C(tar), once; the folder with the
    C(Packages) index becomes a trusted C(file://) repository), fetches the repository's key from C(key_url) into
    C(signed_by) when it is not there, keeps the sources file and the pins (written atomically when they differ,
    mode 0644, with a diff), installs, verifies and runs the kernel guard; then restarts the driver with
    O(restart_command) when O(restart_driver) asks for it and RV(restart) allows it (and forgets the install record).
    On a dnf host it decides and, when nothing must change, verifies; when something must, it changes nothing (the
    role installs with M(ansible.builtin.dnf) and calls it again with O(mark_pending)).
  - "With O(mirror) (the action plugin, on the controller): before the module runs, a tarball's C(source.path) is
    fetched from C(<mirror>/<file name of source.path>) with M(ansible.builtin.get_url) and the matrix's sha256 (its
    folder made first, mode 0755); a bundle already there with that sha256 is not fetched again, one that arrives
    with another is not kept and the task fails naming the bundle, the URL and both checksums. Nothing else runs
    then."
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
attributes:
  check_mode:
    details:
      - Reads the host, probes the repository and reports what would be installed (RV(would_install)); C(changed) predicts
        the install (and, with O(state=pinned), the files, key, bundle and restart). Installs nothing and writes nothing.
  diff_mode:
    details:
      - With O(state=pinned), the driver's change (C(ofed_info -s) and the pinned packages as installed, and as pinned)
        and the diff of every file it writes (sources file, pins, the bundle's C(.sha256)).
  idempotent:
    details: A second run finds the pinned versions installed and does nothing.
options:
  driver:
    description:
      - The C(driver) entry of C(gpufabric_matrix) (flavour, version, source, kernels or dkms, allow_downgrade), or its
        normalised form from P(gpufabric.mlnx.ofed_spec#filter). Checked here too; an error names the bad key.
    type: dict
    required: true
  state:
    description:
      - V(query) reads, decides and probes; changes nothing. Fails on a refused downgrade, a kernel the driver is not built
        for, a tarball checksum mismatch or an unusable repository.
      - V(present) also installs the pinned packages with apt when they are not, then verifies them and the kernel guard.
      - V(verified) installs nothing; the pinned versions must be installed (e.g. by M(ansible.builtin.dnf)) and the kernel
        guard must pass.
      - V(pinned) is the C(gpufabric.mlnx.ofed) role's one call (see the description); it returns RV(ansible_facts).
    type: str
    choices: [query, present, verified, pinned]
    default: query
  repository:
    description:
      - The repository to probe and install from. For apt and dnf sources normally the matrix's own (url, suite, components,
        signed_by, key_url); for a tarball the C(file://) directory of the unpacked bundle.
      - Checked by the rules of the matrix's C(driver.source) before anything runs - a URL with its scheme, an apt
        suite with its components (none for a flat V(./)), absolute key and sources files - every problem named by
        its option.
    type: dict
    suboptions:
      url:
        description: Repository URL (C(https://), C(http://) or C(file://)).
        type: str
      suite:
        description: apt suite; V(./) for a flat repository.
        type: str
        default: ./
      components:
        description: apt components; empty for a flat repository.
        type: list
        elements: str
        default: []
      signed_by:
        description: Key file on the host apt checks the repository's signature with.
        type: str
      key_url:
        description: Where the probe fetches the key from when it is not on the host yet.
        type: str
      trusted:
        description:
          - Accept the repository without a valid signature (apt C(Trusted=yes)). For test repositories and for a bundle whose
            sha256 was verified against the matrix only.
        type: bool
        default: false
      sources_file:
        description: The apt sources file of this repository on the host (the role writes it); O(state=present) updates its index only.
        type: path
  probe:
    description:
      - Before a change, check the repository is reachable and has every pinned version (see the description). Only when
        something has to be installed.
    type: bool
    default: true
  bundle_packages:
    description:
      - For a tarball source, the packages of the bundle to install and pin (their versions come from the bundle's index).
      - Default the flavour's meta package (V(doca-ofed) or V(mlnx-ofed-all)).
    type: list
    elements: str
  package_manager:
    description: V(apt) or V(dnf); V(auto) detects it (C(dpkg-query) and C(apt-get), else C(rpm) and C(dnf)).
    type: str
    choices: [auto, apt, dnf]
    default: auto
  boot_kernel:
    description:
      - The kernel release the host boots next. Default detected - C(grubby --default-kernel), the C(/vmlinuz) or
        C(/boot/vmlinuz) symlink, else the newest C(/boot/vmlinuz-*) (GRUB's first entry); unknown when none exists.
    type: str
  mgmt_interface:
    description:
      - The interface that carries the management connection. Default detected - the interfaces holding O(mgmt_address) or
        the address of C(SSH_CONNECTION), and the interfaces of the default routes.
    type: str
  mgmt_address:
    description: The address Ansible reaches this host at (C(ansible_host)); ignored when it is not on any interface.
    type: str
  restart_driver:
    description:
      - Only reported - C(allowed) in RV(restart) is true when a restart was asked for, a new driver waits and no management
        interface depends on mlx5 (its physical interfaces, through bonds, VLANs and bridges, are not driven by
        C(mlx5_core) and are not listed by C(ibdev2netdev)).
    type: bool
    default: false
  state_dir:
    description: Where the record of an install waiting for a reboot is kept; an absolute directory without C(..).
    type: path
    default: /var/lib/gpufabric/ofed
  mark_pending:
    description:
      - With O(state=verified) or O(state=pinned), record that the driver was installed in this boot (after a
        M(ansible.builtin.dnf) install).
    type: bool
    default: false
  repo_name:
    description:
      - With O(state=pinned), the base name of the files - C(/etc/apt/sources.list.d/NAME.sources) (or C(.list)),
        C(/etc/apt/preferences.d/NAME.pref), the key C(keyring_dir/NAME.gpg). ASCII letters, digits, C(_ . -).
    type: str
    default: gpufabric-ofed
  apt_format:
    description: With O(state=pinned), V(deb822) writes a C(.sources) file, V(list) a one-line C(.list) file.
    type: str
    choices: [deb822, list]
    default: deb822
  keyring_dir:
    description: With O(state=pinned), where the key from C(source.key_url) goes when C(source.signed_by) is not given.
    type: path
    default: /etc/apt/keyrings
  apt_trusted:
    description: With O(state=pinned), accept the apt repository without a valid signature (C(Trusted=yes)); test repositories only.
    type: bool
    default: false
  bundle_dir:
    description: With O(state=pinned), where a tarball is unpacked, one folder per driver version.
    type: path
    default: /var/lib/gpufabric/ofed/bundles
  restart_command:
    description:
      - With O(state=pinned), the driver restart command (argv list), run when O(restart_driver) is true and RV(restart)
        allows it (not in check mode); empty - never run.
    type: list
    elements: str
    default: []
  mirror:
    description:
      - An HTTP mirror's base URL to fetch a tarball's C(source.path) from first (the action plugin, see the
        description); an http:// or https:// URL by the grammar of P(gpufabric.mlnx.mirror_url#filter), refused naming
        C(gpufabric_ofed_mirror) otherwise. Ignored for apt and dnf sources.
    type: str
    default: ""
  mirror_timeout:
    description: Seconds one request to O(mirror) may take.
    type: int
    default: 60
  boot_id_command:
    description:
      - A command whose output changes on every boot, to tell whether a recorded install happened in this boot.
      - Default C(/proc/sys/kernel/random/boot_id), else the boot time in C(/proc/stat).
    type: list
    elements: str
  timeout:
    description: Seconds a repository may take to answer (apt C(Acquire::http::Timeout)); above 0.
    type: int
    default: 30
  lock_timeout:
    description: Seconds C(apt-get install) waits for the dpkg lock (C(DPkg::Lock::Timeout)); above 0.
    type: int
    default: 300
notes:
  - Commands run with argument lists (never a shell) and C(LANG=C).
  - M(ansible.builtin.apt) is not used because it needs C(python3-apt) on the host, which minimal Debian and Ubuntu images lack.
requirements:
  - apt (C(apt-get), C(apt-cache), C(dpkg-query)) or dnf and rpm on the managed host.
seealso:
  - module: ansible.builtin.dnf
  - module: community.general.dnf_versionlock
  - name: DOCA-Host installation and upgrade (NVIDIA documentation)
    description: The repositories and package names of DOCA-OFED.
    link: https://docs.nvidia.com/doca/sdk/doca-host+installation+and+upgrade/index.html
"""

EXAMPLES = r"""
- name: What would change (changes nothing)
  gpufabric.mlnx.ofed_driver:
    driver: "{{ gpufabric_matrix.driver }}"
    repository:
      url: "{{ gpufabric_matrix.driver.source.url }}"
      signed_by: "{{ gpufabric_matrix.driver.source.signed_by }}"
  register: ofed_plan

- name: Install the pinned driver (repository and pin files written before)
  gpufabric.mlnx.ofed_driver:
    driver: "{{ gpufabric_matrix.driver }}"
    state: present
    repository:
      url: "{{ gpufabric_matrix.driver.source.url }}"
      signed_by: /usr/share/keyrings/doca_keyring.gpg
      sources_file: /etc/apt/sources.list.d/gpufabric-ofed.sources
  register: ofed

- name: Report a host that needs a reboot
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }}: {{ ofed.pending_reason }}"
  when: ofed.reboot_required
"""

RETURN = r"""
ansible_facts:
  description: With O(state=pinned), the facts of the C(gpufabric.mlnx.ofed) role (docs/role_facts.md).
  returned: state is pinned
  type: dict
  contains:
    gpufabric_ofed_changed:
      description: The driver was installed (upgraded, downgraded, repaired) in this run - in check mode, would be.
      type: bool
    gpufabric_ofed_reboot_required:
      description: The new driver needs a reboot to run (it was not restarted in place). Read by the C(activate) role.
      type: bool
    gpufabric_ofed_result:
      description:
        - What the driver step did - RV(action), RV(msg) (without the restart's words), RV(reasons), RV(installed),
          RV(would_install), RV(driver), RV(kernels), RV(pending_reason), RV(mgmt) and RV(restart) with C(done)
          (the driver was restarted in this run).
      type: dict
action:
  description: What the driver needed - V(none), V(install), V(upgrade), V(downgrade) or V(repair).
  returned: always
  type: str
  sample: upgrade
compliant:
  description: C(ofed_info -s) and the package manager agreed with the matrix before the task.
  returned: always
  type: bool
reasons:
  description: Why the host is not compliant (empty when it is).
  returned: always
  type: list
  elements: str
  sample: ["ofed_info -s reports OFED-internal-24.10-2.1.8, the matrix pins doca-ofed 25.01-0.6.0.0"]
packages:
  description: Per pinned package the wanted version, the installed one before the task, its state and (after a verify) the version after.
  returned: always
  type: dict
  sample: {doca-ofed: {wanted: "2.10.0-0.5.3", installed: "2.9.2-0.0.3", state: older, after: "2.10.0-0.5.3"}}
pins:
  description: The package versions pinned and installed (for a tarball, read from the bundle's index; null before it is unpacked).
  returned: always
  type: dict
  sample: {doca-ofed: "2.10.0-0.5.3"}
would_install:
  description: The C(NAME=VERSION) arguments of the install (also in check mode and with O(state=query)).
  returned: always
  type: list
  elements: str
installed:
  description: The C(NAME=VERSION) arguments actually installed in this run.
  returned: always
  type: list
  elements: str
driver:
  description: The pinned driver and C(ofed_info -s) before and after the task (after = before unless verified).
  returned: always
  type: dict
  sample: {wanted: "25.01-0.6.0.0", flavour: doca-ofed, before: {version: "24.10-2.1.8", flavour: doca-ofed, raw: "OFED-internal-24.10-2.1.8"},
           after: {version: "25.01-0.6.0", flavour: doca-ofed, raw: "OFED-internal-25.01-0.6.0"}}
kernels:
  description: The running and default boot kernel, how the boot kernel was found, where the mlx5 modules are per kernel, and the guard's refusal.
  returned: always
  type: dict
  sample: {running: "6.1.0-28-amd64", boot: "6.1.0-28-amd64", boot_how: "/vmlinuz -> boot/vmlinuz-6.1.0-28-amd64",
           modules: {"6.1.0-28-amd64": {path: "/lib/modules/6.1.0-28-amd64/updates/dkms/mlx5_core.ko", how: package}}, problem: null}
repository:
  description: The repository probed, the versions it has of the pinned packages, and whether its key file (signed_by) is on the host.
  returned: always
  type: dict
  sample: {url: "https://linux.mellanox.com/public/repo/doca/2.9.2/ubuntu22.04/x86_64/", probed: true, available: {doca-ofed: ["2.9.2-0.0.3"]},
           key_present: true}
tarball:
  description: For a tarball source that was needed, its path and verified sha256.
  returned: always
  type: dict
package_manager:
  description: V(apt) or V(dnf).
  returned: always
  type: str
reboot_required:
  description: An installed driver waits for a reboot or a driver restart.
  returned: always
  type: bool
pending_reason:
  description: Why RV(reboot_required) is true.
  returned: always
  type: str
boot_id:
  description: The identity of the current boot the install record is compared with.
  returned: always
  type: str
mgmt:
  description: The management interfaces, how they were found, whether one depends on mlx5, and per physical interface why.
  returned: always
  type: dict
  sample: {interfaces: [eno1], source: the default route, on_mlx5: false, evidence: {eno1: "driver igb"}}
restart:
  description: Whether a driver restart was requested and is safe, and why.
  returned: always
  type: dict
  sample: {requested: true, allowed: false, reason: "the management interface bond0 depends on the mlx5 driver (...)"}
msg:
  description: One line saying what was (or would be) done.
  returned: always
  type: str
  sample: "upgraded to doca-ofed 25.01-0.6.0.0: doca-ofed=2.10.0-0.5.3, ofed-scripts=25.01.OFED.25.01.0.6.0-1; reboot (or driver restart) required"
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError, ToolFailed
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._ofed import (
    PINNED,
    converge,
    driver_diff,
    driver_spec,
    role_facts,
    summary,
)


def main():
    module = ansible_module(
        AnsibleModule,
        argument_spec=dict(
            driver=dict(type="dict", required=True),
            state=dict(type="str", default="query", choices=["query", "present", "verified", PINNED]),
            repository=dict(type="dict", options=dict(
                url=dict(type="str"),
                suite=dict(type="str", default="./"),
                components=dict(type="list", elements="str", default=[]),
                signed_by=dict(type="str"),
                key_url=dict(type="str", no_log=False),
                trusted=dict(type="bool", default=False),
                sources_file=dict(type="path"),
            )),
            probe=dict(type="bool", default=True),
            bundle_packages=dict(type="list", elements="str"),
            package_manager=dict(type="str", default="auto", choices=["auto", "apt", "dnf"]),
            boot_kernel=dict(type="str"),
            mgmt_interface=dict(type="str"),
            mgmt_address=dict(type="str"),
            restart_driver=dict(type="bool", default=False),
            state_dir=dict(type="path", default="/var/lib/gpufabric/ofed"),
            mark_pending=dict(type="bool", default=False),
            boot_id_command=dict(type="list", elements="str"),
            timeout=dict(type="int", default=30),
            lock_timeout=dict(type="int", default=300),
            repo_name=dict(type="str", default="gpufabric-ofed"),
            apt_format=dict(type="str", default="deb822", choices=["deb822", "list"]),
            keyring_dir=dict(type="path", default="/etc/apt/keyrings"),
            apt_trusted=dict(type="bool", default=False),
            bundle_dir=dict(type="path", default="/var/lib/gpufabric/ofed/bundles"),
            restart_command=dict(type="list", elements="str", default=[]),
            mirror=dict(type="str", default=""),  # the action plugin's; the module never gets it
            mirror_timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    params = module.params

    def key_fetch(url, dest):
        response, info = fetch_url(module, url, timeout=params["timeout"])
        if info.get("status") != 200 or response is None:
            raise ToolFailed("the driver repository's key %s cannot be fetched: %s. Nothing was changed." % (
                url, info.get("msg", "HTTP %s" % info.get("status"))), parameter="gpufabric_matrix.driver.source.key_url")
        with open(dest, "wb") as stream:
            stream.write(response.read())

    matrix = params["driver"]
    name = matrix.get("name") if "flavour" not in matrix else None   # the whole gpufabric_matrix, or its driver entry
    try:
        spec = driver_spec(matrix)
        result = converge(Host(), spec, dict(params, matrix_name=name), check_mode=module.check_mode, key_fetch=key_fetch)
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    state = params["state"]
    if state == PINNED:
        waits = result["package_manager"] == "dnf" and result["action"] != "none"   # the role's dnf tasks install
        state = "query" if waits else "present"
    result["msg"] = summary(result, check_mode=module.check_mode, state=state)
    changes = result.pop("changes")
    if params["state"] == PINNED:
        result["ansible_facts"] = role_facts(result, result["msg"])
        done = [c for c in changes if isinstance(c, str)]
        restart = result["restart"]
        if restart["requested"] and not restart["done"]:
            done.append("driver not restarted: %s" % restart["reason"])
        result["msg"] += "".join("; " + text for text in done)
    result.pop("driver_changed")
    diffs = [c for c in changes if isinstance(c, dict)]
    if params["state"] == PINNED and result["action"] != "none" and (result["installed"] or module.check_mode):
        diffs.insert(0, driver_diff(result))
    if diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
