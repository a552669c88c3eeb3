"""The fabric study: a packet-level fabric of p4sim switches on one virtual clock, RoCEv2 hosts,
workloads, baselines, metrics, the flow-level model and the sweep runner behind ``make demo`` and
``make eval``.

Data flows one way: this package uses the control plane (``control_plane``) and the target
(``p4sim``); nothing in ``control_plane`` imports from here.
"""
