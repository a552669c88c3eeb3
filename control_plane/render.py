"""Per-switch table entries from the fabric model, through per-role Jinja2 templates.

Flow: model + placement -> plan (plan.py) -> the architecture's context per switch
(render_v1model.py, render_tna.py; arches.py picks it) -> `<role>.j2` emits one JSON object per
line -> every entry is checked against the program's contract (contract.py) and the table sizes
-> one document per switch (document.py), written deterministically (fixed key order, one entry
per line) so golden files and code review diffs stay readable.

Before any of it, the fabric's data-plane keys are held against the architecture's parameter
declarations (params.py): a key the program does not implement is refused with file:line:key
and the reason, and a model built in code must keep the declared ranges.

Why templates: the mapping from fabric concepts to P4 tables is the part operators tune and
review (and what changes when the P4 program changes); keeping it in `templates/*.j2` keeps it
out of the Python that computes values.
"""
from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import jinja2

from . import arches, contract, params
from .context import class_context
from .document import FORMAT, RenderError, entry_identity, format_document, read_documents
from .model import Fabric
from .paths import Assignment, assign_jobs
from .plan import SwitchPlan, plan_fabric

__all__ = ["ARCHES", "FORMAT", "RenderError", "RenderResult", "class_context", "entry_identity",
           "format_document", "read_documents", "refuse_unimplemented", "render_fabric", "write_fabric"]

ARCHES = arches.NAMES


@dataclass
class RenderResult:
    documents: dict[str, dict[str, Any]]  # switch name -> document
    plans: dict[str, SwitchPlan]
    assignment: Optional[Assignment]
    seconds: float

    def text(self, switch: str) -> str:
        return format_document(self.documents[switch])


def environment(arch: arches.Architecture) -> jinja2.Environment:
    """The Jinja2 environment of an architecture's templates (strict: an undefined name is an
    error, never an empty string in an entry).  One per templates directory and process: the
    environment caches its compiled templates (and recompiles one whose file changed), so a
    sweep that renders a fabric per run compiles each template once, not once per run."""
    return _environment(str(arch.templates))


@functools.lru_cache(maxsize=None)
def _environment(templates: str) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(templates), undefined=jinja2.StrictUndefined,
                              autoescape=False, keep_trailing_newline=True)


def refuse_unimplemented(fabric: Fabric, arch: str) -> None:
    """RenderError listing every data-plane key of the fabric file that ``arch`` does not
    implement (file:line:key: reason), and every value of a model built in code outside its
    declared range."""
    problems = [str(r) for r in params.refusals(arch, fabric.source, fabric.dataplane_keys)]
    problems += [f"{fabric.source}: {p}" for p in params.out_of_range(fabric.dataplane)]
    if problems:
        raise RenderError(f"fabric {fabric.name} cannot be rendered for {arch}:\n  " + "\n  ".join(problems))


def render_fabric(fabric: Fabric, assignment: Optional[Assignment] = None, arch: str = "v1model",
                  group_ids: Optional[dict[str, dict[tuple[int, ...], int]]] = None) -> RenderResult:
    """Render every switch for `arch`'s program.  The placement is computed unless given (None = compute).
    ``group_ids`` (TNA): per switch, the group-id history a re-plan keeps ids stable with
    (render_tna.groups_of; extended in place); None numbers groups afresh."""
    try:
        architecture = arches.get(arch)
    except ValueError as exc:
        raise RenderError(str(exc)) from None
    refuse_unimplemented(fabric, arch)
    started = time.perf_counter()
    if assignment is None and fabric.jobs and fabric.dataplane.reservations:
        assignment = assign_jobs(fabric)
    plans = plan_fabric(fabric, assignment)
    env = environment(architecture)
    known_sizes = contract.sizes()
    render_switch = architecture.render_switch()
    documents = {name: render_switch(env, fabric, plan, known_sizes,
                                     None if group_ids is None else group_ids.setdefault(name, {}))
                 for name, plan in plans.items()}
    return RenderResult(documents, plans, assignment, time.perf_counter() - started)


def write_fabric(result: RenderResult, fabric: Fabric, out_dir: Path) -> list[Path]:
    """Write `<switch>.json` per switch and `index.json` (which file configures which device)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in result.documents:
        target = out_dir / f"{name}.json"
        target.write_text(result.text(name))
        written.append(target)
    index = {"format": FORMAT, "fabric": fabric.name, "switches": [
        {"name": s.name, "role": s.role, "device_id": s.device_id, "p4runtime": s.p4runtime, "file": f"{s.name}.json"}
        for s in fabric.switches.values()]}
    (out_dir / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    written.append(out_dir / "index.json")
    return written
