"""Imported once by the chaos runner's forkserver: one boto3 session with EC2's service model parsed.

Every schedule's processes fork from there and make their clients from
this session (0.07 s instead of 1-2 s for a new session's first client).
"""

from __future__ import annotations

import boto3

SESSION = boto3.session.Session(region_name="us-east-1")
SESSION.client("ec2", endpoint_url="http://127.0.0.1:9", region_name="us-east-1")  # parse the model (no call)
