"""The architectures Stellar's control plane drives, as plug-ins: one registry entry each.

An architecture is a P4 program and what the control plane needs to drive it: its template
folder, the function that renders one switch's document, its controller class, its contract
(contract.ARCHES: tables, meters, registers) and its P4Info names (archnames).  Everything that
differs per program is looked up here by name, so no module asks ``if arch == "tna"`` to import
the other program's code, and the generic modules (render.py, controller.py) import no
architecture's module: the renderer and controller are named as ``module:attribute`` and loaded
when first used, as entry points are.  Adding an architecture is one entry in ``REGISTRY`` (plus
its contract, names, templates, renderer and controller) and its column in params.py.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import archnames, contract

TEMPLATES = Path(__file__).resolve().parent / "templates"


@dataclass(frozen=True)
class Architecture:
    name: str
    program: str        # the P4 source, relative to the repository
    templates: Path     # the folder of its <role>.j2 templates
    renderer: str       # "module:function": (env, fabric, plan, known_sizes, group_ids) -> document
    controller: str     # "module:Class": the controller loop (controller.Controller or a subclass)

    @property
    def contract(self) -> contract.ArchContract:
        return contract.ARCHES[self.name]

    @property
    def names(self) -> archnames.ArchNames:
        return archnames.names(self.name)

    def render_switch(self) -> Callable[..., dict[str, Any]]:
        return _load(self.renderer)

    def controller_class(self) -> type:
        return _load(self.controller)


REGISTRY: dict[str, Architecture] = {a.name: a for a in (
    Architecture("v1model", "p4src/v1model/stellar.p4", TEMPLATES,
                 "control_plane.render_v1model:render_switch", "control_plane.controller:Controller"),
    Architecture("tna", "p4src/tna/stellar.p4", TEMPLATES / "tna",
                 "control_plane.render_tna:render_switch", "control_plane.controller_tna:TnaController"),
)}
NAMES = tuple(REGISTRY)


def get(name: str) -> Architecture:
    """The architecture ``name``; ValueError naming the known ones."""
    if name not in REGISTRY:
        raise ValueError(f"unknown architecture {name!r} (known: {', '.join(REGISTRY)})")
    return REGISTRY[name]


def _load(target: str) -> Any:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)
