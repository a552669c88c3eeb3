"""p4sim's v1model runtime: runs an ``ir.Program`` with BMv2 simple_switch semantics.

Modules, one job each:

* ``irwalk``   -- the walk over the IR that the Python and the native (C) code generators share:
  what each node means, decided once; each generator only spells it;
* ``codegen``  -- compiles the IR once into Python source (parser, controls, actions, functions):
  one ``ProgramCompiler`` assembled from a module per kind of construct, on ``irwalk``;
* ``objects``  -- the generated classes for headers, structs and header stacks;
* ``support``  -- helpers the generated code calls (runtime shifts, signed saturation, ...);
* ``tables``   -- table entries (P4Runtime validation rules) and exact/LPM/priority lookup;
* ``externs``  -- register, counter, meter (two-rate three-colour) state;
* ``hashing``  -- BMv2's hash/checksum algorithms and bit packing;
* ``pipeline`` -- one program loaded into one switch: generated code bound to its state;
* ``archs``    -- the architecture registry: each architecture's switch class and extern code
  generator (``tna_switch``/``tna_codegen``/``tna`` for TNA and T2NA);
* ``limits``   -- field masks and the re-injection limit every packet walk shares.

The packet walk (queues, replication, clock) lives in ``p4sim.switch`` and ``p4sim.tm``.
"""
