"""Hole 8: caller-supplied strings cannot forge lines in the instance's text log (nor its audit log)."""

from __future__ import annotations

import re

from tests.hierarchy.helpers import short_tmpdir
from tests.security.raw import Server, jobspec, pb

FORGED = "2026-01-01 00:00:00,000 root[1] WARNING forged"


def test_newlines_and_escapes_in_caller_strings_are_escaped_in_every_log() -> None:
    with short_tmpdir() as d:
        s = Server(d).start()
        try:
            raw = s.raw()
            lease = raw.i(
                "MatchAllocate",
                pb.MatchAllocateRequest(
                    jobspec=jobspec(1), request_id="r1", lease=True,
                    child_name=f"c\n{FORGED} name", child_address=f"a\r\n{FORGED} addr\x1b[2J",
                ),
                "admin",
            )  # fmt: skip
            raw.code(
                raw.i,
                "Shrink",
                pb.ShrinkRequest(
                    jobid=lease.jobid, paths=[f"/cluster0/x\n{FORGED} path"], lease_token=lease.lease_token
                ),
                "admin",
            )
            raw.code(raw.i, "Stat", pb.StatRequest(), token=f"v1.\n{FORGED} token.x")
            raw.close()
        finally:
            s.stop()
        text = s.text_log()
        assert "forged" in text  # the strings were logged ...
        lines = text.splitlines()
        assert not [x for x in lines if x.startswith("2026-01-01")], text  # ... never as a line of their own
        assert "\x1b" not in text and "\r" not in text
        assert re.search(r"\\n2026-01-01 00:00:00,000 root\[1\] WARNING forged name", text), text
        for rec in s.audit():
            assert "\n" not in str(rec)
