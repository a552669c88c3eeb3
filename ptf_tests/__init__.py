"""PTF suite: the same tests against p4sim (default) and BMv2 (TARGET=bmv2); see run.sh."""
