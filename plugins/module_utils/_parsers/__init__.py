# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of NVIDIA/Mellanox tool output: one function per tool output, and a registry.

``parse(tool, text)`` looks ``tool`` up in ``PARSERS`` and returns plain dicts and lists of
strings (values as printed, trimmed; ints only where a parser's docstring says so). ``text``
is a string (``stdout``), bytes, or a list of lines (``stdout_lines``).

What every parser does with a line:

- blank lines, shell prompts (``root@host:~# cmd``, ``sh-5.1# cmd``, ``$ cmd``, ``+ cmd``),
  echoes of the tool's own command line, ``...``/``(...)`` elisions and ``----`` rules are
  skipped, so excerpts pasted from a terminal parse as well as raw stdout;
- ``\\r``/``\\b`` progress redraws are reduced to what the terminal showed last;
- lines the parser does not know outside its tables are ignored, but a line that breaks a
  table it is reading (an mlxconfig parameter row, an mlxfwmanager device block) raises.

``ParseError`` (a ValueError) is raised for an unknown tool and for text in which a parser
recognises nothing of its tool; it names the tool and, when there is one, the offending line.
``parse_errors(text)`` returns the ``-E-`` lines of any MFT/mstflint tool's output.

One file per tool output in this package: the NVIDIA tools' (``mlxconfig.py``, ``flint.py``, ...; registered
in ``PARSERS`` and importable from here) and the system tools' the modules read (``packages.py``: apt indexes,
dpkg-query, rpm, dkms, madison, repoquery; ``ip.py``; ``sysfs.py``: ASPM policy, traffic class). ``common.py``
holds what every parser shares (line clean-up, ``ParseError``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    ParseError,
    parse_errors,
)

# PARSERS and the parse_* functions are the package's too, imported when first asked for (see __getattr__).
__all__ = ["ParseError", "parse", "parse_errors", "parsers"]

# Tool name -> the name of its parser. MFT and mstflint names of one tool share a parser.
_TOOLS = {
    "mlxconfig": "parse_mlxconfig",
    "mstconfig": "parse_mlxconfig",
    "mlxconfig_json": "parse_mlxconfig_json",
    "mstconfig_json": "parse_mlxconfig_json",
    "mlxfwmanager": "parse_mlxfwmanager",
    "mstfwmanager": "parse_mlxfwmanager",
    "mlxup": "parse_mlxfwmanager",
    "mlxfwmanager_xml": "parse_mlxfwmanager_xml",
    "mstfwmanager_xml": "parse_mlxfwmanager_xml",
    "mlxup_xml": "parse_mlxfwmanager_xml",
    "flint": "parse_flint",
    "mstflint": "parse_flint",
    "flint_burn": "parse_flint_burn",
    "mstflint_burn": "parse_flint_burn",
    "mst_status": "parse_mst_status",
    "ibstat": "parse_ibstat",
    "lspci": "parse_lspci",
    "ibdev2netdev": "parse_ibdev2netdev",
    "ofed_info": "parse_ofed_info",
    "mlxfwreset": "parse_mlxfwreset",
    "mstfwreset": "parse_mlxfwreset",
    "mlxfwreset_reset": "parse_mlxfwreset_reset",
    "mstfwreset_reset": "parse_mlxfwreset_reset",
    "mlnx_qos": "parse_mlnx_qos",
    "ethtool_i": "parse_ethtool_i",
    "perftest": "parse_perftest",
    "nccl_tests": "parse_nccl_tests",
    "mlxlink_counters": "parse_mlxlink_counters",
    "mstlink_counters": "parse_mlxlink_counters",
}


def _functions() -> dict:
    """Every parser function by name, imported at the first use of one (a module that only needs ``ParseError`` or
    one parser's module does not import them all). The imports are spelled out so that Ansible packs every parser with
    each module that parses."""
    if not _LOADED:
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ethtool import parse_ethtool_i
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.flint import (
            parse_flint,
            parse_flint_burn,
        )
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ibdev2netdev import parse_ibdev2netdev
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ibstat import parse_ibstat
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.lspci import parse_lspci
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.mlnx_qos import parse_mlnx_qos
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.mlxconfig import (
            parse_mlxconfig,
            parse_mlxconfig_json,
        )
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.mlxfwmanager import (
            parse_mlxfwmanager,
            parse_mlxfwmanager_xml,
        )
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.mlxfwreset import (
            parse_mlxfwreset,
            parse_mlxfwreset_reset,
        )
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.mlxlink import parse_mlxlink_counters
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.mst import parse_mst_status
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.nccl_tests import parse_nccl_tests
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ofed_info import parse_ofed_info
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.perftest import parse_perftest
        _LOADED.update({name: value for name, value in locals().items() if name.startswith("parse_")})
    return _LOADED


_LOADED: dict = {}


def parsers() -> dict:
    """Tool name -> parser (MFT and mstflint names of one tool share a parser)."""
    functions = _functions()
    return {tool: functions[name] for tool, name in _TOOLS.items()}


def __getattr__(name: str):
    """``PARSERS`` and the ``parse_*`` functions of the package, imported when first asked for (PEP 562)."""
    if name == "PARSERS":
        return parsers()
    if name.startswith("parse_") and name in _functions():
        return _functions()[name]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def parse(tool: str, text: str | bytes | Sequence[str]) -> dict | list[dict]:
    """Parse ``text`` (str, bytes or list of lines) as the output of ``tool`` (a PARSERS key).

    Raises ParseError naming ``tool`` for an unknown tool or text that is not its output.
    """
    name = _TOOLS.get(tool) if isinstance(tool, str) else None
    if name is None:
        raise ParseError(str(tool), "unknown tool; known tools: %s" % ", ".join(sorted(_TOOLS)))
    parser = _functions()[name]
    try:
        return parser(text, tool=tool)
    except ParseError as err:
        err.tool = tool
        raise
