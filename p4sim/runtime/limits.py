"""Field masks and the re-injection limit shared by every architecture's packet walk.

``p4sim.switch`` (v1model) and ``p4sim.runtime.tna_switch`` (Tofino) both fill intrinsic
metadata fields of these widths and bound resubmit/recirculate loops the same way; the values
live here so neither switch module has to import the other for them.
"""
from __future__ import annotations

M9, M16, M19, M32, M48 = (1 << 9) - 1, (1 << 16) - 1, (1 << 19) - 1, (1 << 32) - 1, (1 << 48) - 1
MAX_REINJECT = 8  # resubmit/recirculate passes per original packet before it is dropped
