"""The editor's files through ACP ``fs/read_text_file`` and ``fs/write_text_file``.

The core's file tools take an ``EditorFiles`` (``tools/base.py``): after confining a path
exactly as for the disk, they read and write it here, so the model sees the editor's unsaved
buffers and its edits land in them. Whatever the client does not offer, or answers with an
error, falls back to the workspace on disk (None / False).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from acp.interfaces import Client
from acp.schema import ClientCapabilities

log = logging.getLogger(__name__)

# A read the editor does not answer in this time is read from the disk instead. Writes have
# no such limit: one that timed out might still land, and the disk would then be written too.
READ_SECONDS: Final = 30.0


@dataclass(frozen=True)
class ClientFiles:
    """One ACP session's view of the client's files, as far as its capabilities go."""

    client: Client
    session_id: str
    reads: bool
    writes: bool

    @staticmethod
    def offered(
        client: Client, session_id: str, capabilities: ClientCapabilities
    ) -> ClientFiles | None:
        """The client's files when its ``initialize`` offered ``fs`` methods, else None."""
        fs = capabilities.fs
        if fs is None or not (fs.read_text_file or fs.write_text_file):
            return None
        return ClientFiles(client, session_id, bool(fs.read_text_file), bool(fs.write_text_file))

    async def read_text(self, path: Path) -> str | None:
        if not self.reads:
            return None
        try:
            answer = await asyncio.wait_for(
                self.client.read_text_file(session_id=self.session_id, path=str(path)),
                READ_SECONDS,
            )
        except TimeoutError:
            log.warning("fs/read_text_file %s: no answer in %.0f s; reading the disk", path,
                        READ_SECONDS)  # fmt: skip
            return None
        except Exception as err:  # any failure of the client: use the disk
            log.warning("fs/read_text_file %s failed (%s); reading the disk", path, err)
            return None
        return answer.content

    async def write_text(self, path: Path, text: str) -> bool:
        if not self.writes:
            return False
        try:
            await self.client.write_text_file(
                session_id=self.session_id, path=str(path), content=text
            )
        except Exception as err:  # any failure of the client: use the disk
            log.warning("fs/write_text_file %s failed (%s); writing the disk", path, err)
            return False
        return True
