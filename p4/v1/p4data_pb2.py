"""`p4.v1.p4data_pb2` = finsy's generated module (see p4/__init__.py for why)."""
import sys

from finsy.proto.p4.v1 import p4data_pb2 as _module

sys.modules[__name__] = _module
