"""The P4Runtime protobuf modules under their canonical names (`p4.v1`, `p4.config.v1`).

Why this package exists: the `p4runtime` wheel on PyPI (1.6.0 included) carries modules made by
a protoc older than 3.19, which protobuf's compiled upb backend refuses to load.  finsy, the
controller's P4Runtime client, ships the same protos compiled by protoc 6.33 and registers them
under the canonical file names (`p4/v1/p4runtime.proto`, ...), so a second, different copy could
not even share the descriptor pool.  Each module here therefore *is* finsy's module (the import
system hands back the object placed in `sys.modules`): one set of message classes for the p4sim
server, the controller, the tests and PTF, and `from p4.v1 import p4runtime_pb2` keeps working.
"""
