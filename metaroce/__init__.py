"""MetaRoCE: an open implementation of the MetaRoCE RDMA transport.

Subpackages: ``metaroce.models`` (codec, protocol logic, endpoints, cycle models),
``metaroce.hdl`` (Amaranth RTL), ``metaroce.tb`` (cocotb testbenches),
``metaroce.sim`` (Verilator toolchain and the fabric simulator).
"""

__version__ = "0.1.0"

#: Version of the project's own MetaRoCE wire format (see docs/spec/wire.md, MR-WIRE-001).
WIRE_VERSION = 1
