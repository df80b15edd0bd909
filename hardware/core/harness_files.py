"""The suite's own files (a cache root, a compile's temporary folder) when the file system cannot
hold them: full (ENOSPC), over a quota (EDQUOT) or read-only (EROFS). That is the harness's error,
never the device's CRASH or COMPILE_ERROR: a full cache disk made every iree-cpu case a CRASH
(OSError on its claim) or a COMPILE_ERROR (iree-compile's "No space left on device"), and
``expectations update`` proposed them as known bugs (issue 47 defect 2).
"""
from __future__ import annotations

import contextlib
import errno
import os
from typing import Iterator, Optional

from accel_regress.core.errors import HarnessError

NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
# The words a tool prints for them: strerror's, as LLVM's raw_fd_ostream reports a failed write or
# close ("error: ... No space left on device", llvm/lib/Support/raw_ostream.cpp, error_code message).
_WORDS = tuple(os.strerror(e) for e in NO_ROOM)


@contextlib.contextmanager
def writing(what: str) -> Iterator[None]:
    """An OSError of NO_ROOM inside the block becomes the HarnessError that names ``what``."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in NO_ROOM:
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        raise HarnessError(f"{what}: {exc.strerror}{where}: the harness's own files, not the device",
                           detail={"errno": errno.errorcode.get(exc.errno or 0, str(exc.errno))}) from None


def said_by_tool(text: str) -> Optional[str]:
    """The NO_ROOM words in a tool's output (None: none): its own write failed, not the program."""
    return next((w for w in _WORDS if w in (text or "")), None)
