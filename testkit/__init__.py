"""Harness code the tests (``tests/``) and the benchmarks (``bench/``) share.

Neither of those directories imports the other; both import this package:

* ``leaf``             -- the Stellar v1model leaf on the in-process p4sim switch (entries by name,
  packet builders, the CONTRACT.md codes);
* ``packet_fuzz``      -- the malformed-packet corpus and its campaign on that leaf;
* ``differential``     -- the same corpus through two target processes (p4sim, BMv2), compared;
* ``fake_switch``      -- a stand-in for ``p4sim.Switch`` behind the P4Runtime server;
* ``p4rt_harness``     -- a P4Runtime server on a free loopback port over the fake (or real) switch;
* ``p4runtime_fuzz``   -- random and scripted P4Runtime requests and the codes allowed for them;
* ``p4sim_process``    -- ``p4sim`` as a separate process (compile, start, free ports);
* ``yaml_fuzz``        -- mutated fabric YAML through the control plane's model;
* ``tofino_resources`` -- bf-p4c runs of the TNA program and what its reports say.
"""
