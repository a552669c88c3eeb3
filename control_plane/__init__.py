"""Stellar control plane: fabric YAML -> validated model -> job-aware path sets -> per-switch entries.

Modules: `model` (load + validate), `paths` (path sets and the job-aware assignment), `render`
(Jinja2 templates -> per-switch entry files), `cli` (`stellarctl`).
"""
