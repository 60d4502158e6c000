# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the corpus generators share: the source root, the protocol's
Python module compiled from proto/memacct/v1/memacct.proto with protoc
(Debian's python3-protobuf), and a varint encoder."""

import os
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_tmp = tempfile.mkdtemp()
subprocess.run(["protoc", f"--proto_path={root}/proto/memacct/v1", f"--python_out={_tmp}",
                f"{root}/proto/memacct/v1/memacct.proto"], check=True)
sys.path.insert(0, _tmp)
import memacct_pb2 as pb  # noqa: E402,F401


def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)
