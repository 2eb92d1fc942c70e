# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: switch_os_target
short_description: For one leaf, what the pinned switch OS of the matrix means - none, upgrade, boot or refused
version_added: 0.2.0
description:
  - Takes the running release of a leaf (RV(gpufabric.mlnx.nvue_info#module:system) C(.release)), its image
    partitions (RV(gpufabric.mlnx.nvue_info#module:image)) and the matrix C(gpufabric_matrix), and says what the
    pinned C(switch_os) means for that leaf.
  - "V(none): the pinned release runs. V(upgrade): fetch the image, install it in the other partition, boot-next,
    one reboot. V(boot): the other partition already holds the pinned release (boot-next and one reboot, no
    fetch). V(refused): a downgrade without C(allow_downgrade: true) (naming both releases), an unreadable running
    release, or no URL to fetch the image from."
  - Without a pin for the switch OS the action is V(none), unless the running release is below
    C(compatibility.switch_os_min) (then V(refused)).
  - The image URL is the pin's C(url), else O(base_url) (the site's C(gpufabric_switch_image_base_url)), V(/) and
    the image file name.
  - Fails listing every problem of the matrix when it is not consistent (see P(gpufabric.mlnx.matrix_check#filter)).
options:
  _input:
    description: The running release, e.g. V(5.9.1).
    type: str
    required: true
  image:
    description: The C(image) that M(gpufabric.mlnx.nvue_info) returns (C(current) and C(partitions)); V(null) when
      it was not read (then V(boot) is never predicted).
    type: dict
    required: true
  matrix:
    description: The matrix, the value of C(gpufabric_matrix).
    type: dict
    required: true
  base_url:
    description: Where the site serves switch images (C(gpufabric_switch_image_base_url)); used when the pin has
      no C(url).
    type: str
  switch_os:
    description: The switch OS of the leaf.
    type: str
    default: cumulus-linux
seealso:
  - module: gpufabric.mlnx.nvue_image
  - module: gpufabric.mlnx.nvue_info
  - plugin: gpufabric.mlnx.matrix_check
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Read the leaf
  gpufabric.mlnx.nvue_info:
    gather: [system, image]
  register: __leaf

- name: What the pinned switch OS means for it
  ansible.builtin.set_fact:
    __os: "{{ __leaf.system.release | gpufabric.mlnx.switch_os_target(__leaf.image, gpufabric_matrix,
              gpufabric_switch_image_base_url | default(omit)) }}"

- name: Install the pinned release
  gpufabric.mlnx.nvue_image:
    release: "{{ __os.release }}"
    url: "{{ __os.url }}"
    sha256: "{{ __os.sha256 }}"
    allow_downgrade: "{{ __os.allow_downgrade }}"
  when: __os.action in ['upgrade', 'boot']
"""

RETURN = r"""
_value:
  description: What to do with this leaf.
  type: dict
  contains:
    action: {description: "V(none), V(upgrade), V(boot) or V(refused).", type: str}
    release: {description: The pinned release (V(null) without a pin)., type: str}
    running: {description: The running release as given., type: str}
    reason: {description: Why, in words (for V(refused), what is wrong and what the matrix allows)., type: str}
    downgrade: {description: True when the pinned release is older than the running one., type: bool}
    image: {description: The pinned image file name., type: str}
    url: {description: Where the switch fetches the image (only for V(upgrade))., type: str}
    sha256: {description: "The image's sha256, 64 lower-case hex digits.", type: str}
    allow_downgrade: {description: The pin's C(allow_downgrade)., type: bool}
  sample:
    action: upgrade
    release: 5.11.0
    running: 5.9.1
    reason: upgrade 5.9.1 -> 5.11.0
    downgrade: false
    image: cumulus-linux-5.11.0-mlx-amd64.bin
    url: http://mirror.example/cumulus/cumulus-linux-5.11.0-mlx-amd64.bin
    sha256: 09aeb9d4dbbd12cf01f140a20ea851575e23b37c04985d9d79a4a1ff5d8903ec
    allow_downgrade: false
"""

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_matrix = lazy("module_utils._matrix")


@filter_errors("switch_os_target")
def switch_os_target(running, image, matrix, base_url=None, switch_os="cumulus-linux"):
    return _matrix.switch_os_target(running, image, matrix, base_url, switch_os)


class FilterModule:
    def filters(self):
        return {"switch_os_target": switch_os_target}
