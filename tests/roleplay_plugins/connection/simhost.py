"""A local connection that Ansible does not call "local": the role tests' simulated host (tests/_roleplay.py).

ansible.builtin.reboot refuses a connection whose transport is ``local`` (it would reboot the controller). The
role tests' host is a simulator state on this machine whose reboot is ``mlxsim reboot`` (the roles'
``gpufabric_activate_reboot_command``), so the real reboot action runs against it: it reads the boot id
(``mlxsim boot-id``), runs the reboot command, waits for a new boot id and runs its test command - every
command locally, as the local connection runs it."""
from ansible.plugins.connection.local import Connection as LocalConnection

DOCUMENTATION = """
    name: simhost
    short_description: the local connection under another name, for a simulated host on the controller
    description:
        - Runs every command on the controller, as ansible.builtin.local does; its transport is not C(local), so
          ansible.builtin.reboot runs (with a reboot_command that reboots the simulated host, not the controller).
    author: gpufabric.mlnx contributors
    options:
        become_success_timeout:
            type: int
            default: 10
            description: As the local connection's option.
            vars:
                - name: ansible_local_become_success_timeout
        become_strip_preamble:
            type: bool
            default: true
            description: As the local connection's option.
            vars:
                - name: ansible_local_become_strip_preamble
    extends_documentation_fragment:
        - connection_pipelining
"""


class Connection(LocalConnection):
    transport = "simhost"
