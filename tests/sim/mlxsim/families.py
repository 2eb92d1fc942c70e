"""Device families: PCI ids, names, MST node names, parameter layout and defaults.

Sources for the facts below (no code was copied):
- device ids / mst node names: tests/fixtures/FORMAT_FACTS.md ("mst status" section) and the
  captures in tests/fixtures/real (mt4129 = ConnectX-7, mt41692 = BlueField-3, ...).
- lspci names: pci.ids as printed in the real captures (lspci_gb200_1.txt: "MT2910 Family
  [ConnectX-7]", "MT43244 BlueField-3 integrated ConnectX-7 network controller";
  lspci_nn_cx6_bf2_1.txt: "MT28908 Family [ConnectX-6] [15b3:101b]").
- parameter order and default values: the full mstconfig -e listing in
  mstconfig_e_query_cx4lx_1.txt and the ConnectX-7 captures mlxconfig_query_cx7_*.txt
  (order of TLVs as the tool prints them; port TLVs print _P1 then _P2 per TLV).
- MFT 4.30.1-1210 LTS bundles FW 28.43.2566 / 22.43.2566 / 20.43.2566 / 32.43.2566
  (docs.nvidia.com/networking/display/mftv43011210lts/supported-adapter-cards-firmware-versions).
"""

# Ordered parameter layout. A plain string is one parameter (value = default); a tuple
# ("port", [names]) is a port TLV printed as NAME_P1... then NAME_P2...
# Each entry may carry a default via DEFAULTS; unknown -> 0.

_HEAD = [
    "MEMIC_BAR_SIZE", "MEMIC_SIZE_LIMIT",
]
_CX7_EXTRA_HEAD = ["MEMIC_ATOMIC", "MEMIC_ATOMIC_ENDIANESS"]
_HOST_CHAINING = ["HOST_CHAINING_MODE", "HOST_CHAINING_CACHE_DISABLE", "HOST_CHAINING_DESCRIPTORS",
                  "HOST_CHAINING_TOTAL_BUFFER_SIZE"]
_FLEX = ["FLEX_PARSER_PROFILE_ENABLE", "PROG_PARSE_GRAPH", "FLEX_IPV4_OVER_VXLAN_PORT", "ROCE_NEXT_PROTOCOL",
         "ESWITCH_HAIRPIN_DESCRIPTORS", "ESWITCH_HAIRPIN_TOT_BUFFER_SIZE"]
_PCI_A = ["PF_BAR2_SIZE", "PF_NUM_OF_VF_VALID", "NON_PREFETCHABLE_PF_BAR", "VF_VPD_ENABLE", "STRICT_VF_MSIX_NUM",
          "VF_NODNIC_ENABLE", "NUM_PF_MSIX_VALID", "NUM_OF_VFS", "NUM_OF_PF", "SRIOV_EN"]
_LINK_TYPE = ("port", ["LINK_TYPE"])
_PCI_B = ["PF_LOG_BAR_SIZE", "VF_LOG_BAR_SIZE", "NUM_PF_MSIX", "NUM_VF_MSIX", "INT_LOG_MAX_PAYLOAD_SIZE",
          "PCIE_CREDIT_TOKEN_TIMEOUT", "MAX_ACC_OUT_READ", "ACCURATE_TX_SCHEDULER", "PARTIAL_RESET_EN",
          "SW_RECOVERY_ON_ERRORS", "RESET_WITH_HOST_ON_ERRORS", "PCI_BUS0_RESTRICT_SPEED", "PCI_BUS0_RESTRICT_ASPM",
          "PCI_BUS0_RESTRICT_WIDTH", "PCI_BUS0_RESTRICT", "PCI_DOWNSTREAM_PORT_OWNER", "CQE_COMPRESSION",
          "IP_OVER_VXLAN_EN", "MKEY_BY_NAME", "UCTX_EN", "PCI_ATOMIC_MODE", "TUNNEL_ECN_COPY_DISABLE",
          "ROCE_ADAPTIVE_ROUTING_EN", "LRO_LOG_TIMEOUT0", "LRO_LOG_TIMEOUT1", "LRO_LOG_TIMEOUT2", "LRO_LOG_TIMEOUT3",
          "ICM_CACHE_MODE", "TX_SCHEDULER_BURST", "LOG_DCR_HASH_TABLE_SIZE", "MAX_PACKET_LIFETIME", "DCR_LIFO_SIZE",
          "ROCE_CC_LEGACY_DCQCN"]
_PORT_TLVS = [
    ("port", ["ROCE_CC_PRIO_MASK", "ROCE_CC_CNP_MODERATION"]),
    ("port", ["CLAMP_TGT_RATE_AFTER_TIME_INC", "CLAMP_TGT_RATE", "RPG_TIME_RESET", "RPG_BYTE_RESET", "RPG_THRESHOLD",
              "RPG_MAX_RATE", "RPG_AI_RATE", "RPG_HAI_RATE", "RPG_GD", "RPG_MIN_DEC_FAC", "RPG_MIN_RATE",
              "RATE_TO_SET_ON_FIRST_CNP", "DCE_TCP_G", "DCE_TCP_RTT", "RATE_REDUCE_MONITOR_PERIOD",
              "INITIAL_ALPHA_VALUE", "MIN_TIME_BETWEEN_CNPS", "CNP_802P_PRIO", "CNP_DSCP"]),
    ("port", ["LLDP_NB_DCBX", "LLDP_NB_RX_MODE", "LLDP_NB_TX_MODE"]),
    ("port", ["ROCE_RTT_RESP_DSCP", "ROCE_RTT_RESP_DSCP_MODE"]),
    ("port", ["DCBX_IEEE", "DCBX_CEE", "DCBX_WILLING"]),
    ("port", ["KEEP_ETH_LINK_UP", "KEEP_IB_LINK_UP", "KEEP_LINK_UP_ON_BOOT", "KEEP_LINK_UP_ON_STANDBY",
              "DO_NOT_CLEAR_PORT_STATS", "AUTO_POWER_SAVE_LINK_DOWN"]),
    ("port", ["NUM_OF_VL", "NUM_OF_TC", "NUM_OF_PFC", "VL15_BUFFER_SIZE"]),
    ("port", ["DUP_MAC_ACTION", "SRIOV_IB_ROUTING_MODE", "IB_ROUTING_MODE"]),
    ("port", ["PHY_FEC_OVERRIDE"]),
]
_TAIL = ["WOL_MAGIC_EN", "PF_SD_GROUP", "ROCE_CONTROL", "PCI_WR_ORDERING", "MULTI_PORT_VHCA_EN", "PORT_OWNER",
         "ALLOW_RD_COUNTERS", "RENEG_ON_CHANGE", "TRACER_ENABLE", "IP_VER", "BOOT_UNDI_NETWORK_WAIT", "UEFI_HII_EN",
         "BOOT_DBG_LOG", "UEFI_LOGS", "BOOT_VLAN", "LEGACY_BOOT_PROTOCOL", "BOOT_INTERRUPT_DIS", "BOOT_LACP_DIS",
         "BOOT_VLAN_EN", "BOOT_PKEY", "DYNAMIC_VF_MSIX_TABLE", "EXP_ROM_UEFI_ARM_ENABLE", "EXP_ROM_UEFI_x86_ENABLE",
         "EXP_ROM_PXE_ENABLE", "ADVANCED_PCI_SETTINGS", "SAFE_MODE_THRESHOLD", "SAFE_MODE_ENABLE"]
_BF_INTERNAL_CPU = ["INTERNAL_CPU_MODEL", "INTERNAL_CPU_PAGE_SUPPLIER", "INTERNAL_CPU_ESWITCH_MANAGER",
                    "INTERNAL_CPU_IB_VPORT0", "INTERNAL_CPU_OFFLOAD_ENGINE", "INTERNAL_CPU_RSHIM"]

# Parameters shown only when ADVANCED_PCI_SETTINGS is True in the *current* configuration
# (the real tool hides the advanced PCI TLVs otherwise).
ADVANCED = {"MAX_ACC_OUT_READ", "PCIE_CREDIT_TOKEN_TIMEOUT"}

# Read-only parameters: no public capture shows an 'RO' row, so which TLV a firmware reports as
# read-only is an assumption here: CRYPTO_POLICY (set in manufacturing; these cards are the
# "Crypto Disabled" / "No Crypto" SKUs).

# Device defaults, mostly as read off the real -e listings (Default column).
DEFAULTS = {
    "MEMIC_SIZE_LIMIT": 1, "ROCE_NEXT_PROTOCOL": 254, "NUM_PF_MSIX_VALID": 1, "NUM_OF_PF": 1,
    "PF_LOG_BAR_SIZE": 5, "NUM_PF_MSIX": 63, "NUM_VF_MSIX": 11, "UCTX_EN": 1,
    "LRO_LOG_TIMEOUT0": 6, "LRO_LOG_TIMEOUT1": 7, "LRO_LOG_TIMEOUT2": 8, "LRO_LOG_TIMEOUT3": 13,
    "LOG_DCR_HASH_TABLE_SIZE": 14, "DCR_LIFO_SIZE": 16384,
    "ROCE_CC_PRIO_MASK": 255, "CLAMP_TGT_RATE_AFTER_TIME_INC": 1, "RPG_TIME_RESET": 300,
    "RPG_BYTE_RESET": 32767, "RPG_THRESHOLD": 1, "RPG_AI_RATE": 5, "RPG_HAI_RATE": 50, "RPG_GD": 11,
    "RPG_MIN_DEC_FAC": 50, "RPG_MIN_RATE": 1, "DCE_TCP_G": 1019, "DCE_TCP_RTT": 1,
    "RATE_REDUCE_MONITOR_PERIOD": 4, "INITIAL_ALPHA_VALUE": 1023, "MIN_TIME_BETWEEN_CNPS": 4,
    "CNP_802P_PRIO": 6, "CNP_DSCP": 48, "LLDP_NB_RX_MODE": 2, "LLDP_NB_TX_MODE": 2,
    "DCBX_IEEE": 1, "DCBX_CEE": 1, "DCBX_WILLING": 1, "KEEP_ETH_LINK_UP": 1,
    "NUM_OF_VL": 3, "NUM_OF_PFC": 8, "SRIOV_IB_ROUTING_MODE": 1, "IB_ROUTING_MODE": 1,
    "ROCE_CONTROL": 2, "PORT_OWNER": 1, "ALLOW_RD_COUNTERS": 1, "RENEG_ON_CHANGE": 1, "TRACER_ENABLE": 1,
    "UEFI_HII_EN": 1, "BOOT_VLAN": 1, "LEGACY_BOOT_PROTOCOL": 1, "BOOT_LACP_DIS": 1,
    "EXP_ROM_UEFI_x86_ENABLE": 1, "EXP_ROM_UEFI_ARM_ENABLE": 1, "EXP_ROM_PXE_ENABLE": 1,
    "SAFE_MODE_THRESHOLD": 10, "SAFE_MODE_ENABLE": 1, "IP_VER": 0,
    "DPA_AUTHENTICATION": 1, "INTERNAL_CPU_MODEL": 1, "LINK_TYPE": 1,
}

# Per-family overrides (ConnectX-7: MEMIC_ATOMIC_ENABLE(2) as in mlxconfig_query_cx7_partial_1.txt).
FAMILY_DEFAULTS = {
    "ConnectX7": {"MEMIC_ATOMIC": 2},
    "BlueField3": {"MEMIC_ATOMIC": 2},
}


def _layout(cx7=False, vpi=True, bf=False, dpa=False, module_split=False):
    out = []
    if module_split:
        out.append("MODULE_SPLIT_M0")
    out += _HEAD
    if cx7:
        out += _CX7_EXTRA_HEAD
    out += _HOST_CHAINING + _FLEX
    if dpa:
        out.append("DPA_AUTHENTICATION")
    out.append("CRYPTO_POLICY")
    if bf:
        out += _BF_INTERNAL_CPU
    out += _PCI_A
    if vpi:
        out.append(_LINK_TYPE)
    out += _PCI_B + _PORT_TLVS + _TAIL
    return out


FAMILIES = {
    "ConnectX7": {
        "dev_id": 4129, "pci_id": "1021", "lspci": "MT2910 Family [ConnectX-7]", "rev": 0,
        "ca_type": "MT4129", "fw_major": 28, "image_type": "FS4", "uids": 16,
        "layout": _layout(cx7=True, vpi=True, dpa=True, module_split=True),
        "read_only": ["CRYPTO_POLICY"],
        "max": {"NUM_OF_VFS": 127}, "pcie": ("32GT/s", 16), "slot_power": "75W",
        "reset_levels": [3, 4], "reset_types": [0, 1],
    },
    "ConnectX6DX": {
        "dev_id": 4125, "pci_id": "101d", "lspci": "MT2892 Family [ConnectX-6 Dx]", "rev": 0,
        "ca_type": "MT4125", "fw_major": 22, "image_type": "FS4", "uids": 8,
        "layout": _layout(cx7=True, vpi=False),
        "read_only": ["CRYPTO_POLICY"],
        "max": {"NUM_OF_VFS": 127}, "pcie": ("16GT/s", 16), "slot_power": "25W",
        "reset_levels": [3, 4], "reset_types": [0],
    },
    "ConnectX6": {
        "dev_id": 4123, "pci_id": "101b", "lspci": "MT28908 Family [ConnectX-6]", "rev": 0,
        "ca_type": "MT4123", "fw_major": 20, "image_type": "FS4", "uids": 8,
        "layout": _layout(vpi=True),
        "read_only": ["CRYPTO_POLICY"],
        "max": {"NUM_OF_VFS": 127}, "pcie": ("16GT/s", 16), "slot_power": "25W",
        "reset_levels": [3, 4], "reset_types": [0],
    },
    "BlueField3": {
        "dev_id": 41692, "pci_id": "a2dc",
        "lspci": "MT43244 BlueField-3 integrated ConnectX-7 network controller", "rev": 1,
        "ca_type": "MT41692", "fw_major": 32, "image_type": "FS4", "uids": 16,
        "layout": _layout(cx7=True, vpi=True, bf=True, dpa=True, module_split=True),
        "read_only": ["CRYPTO_POLICY"],
        "max": {"NUM_OF_VFS": 127}, "pcie": ("32GT/s", 16), "slot_power": "75W",
        "reset_levels": [1, 3, 4], "reset_types": [0, 2],
        "extra_functions": [{"func": 2, "class": "DMA controller", "class_id": "0801", "pci_id": "c2d5",
                             "lspci": "MT43244 BlueField-3 SoC Management Interface"}],
    },
}

MST_PREFIX = {4129: "mt4129", 4125: "mt4125", 4123: "mt4123", 41692: "mt41692"}
