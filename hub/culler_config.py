"""The idle culler's config file (jupyterhub-idle-culler --config=...): a busy kernel is activity.

The culler stops a server when the hub's last_activity for it is older than the timeout. That
time comes from the proxy's traffic and from the server's own reports, which send jupyter_server's
last_activity(): the latest of its start, API requests and kernel *messages*. The image adds its
running jobs and busy kernels to it (image/python/tf29image/jobs/activity.py); an image from before
that does not, so there a kernel that runs a long cell without printing sends nothing, and a silent
training run looks idle and would be culled mid-epoch. So before culling, this hook asks the server itself
(GET /user/NAME/api/kernels at the server's own address, with the culler's token, which holds
access:servers) and keeps it while any kernel's execution_state is "busy"; asking neither goes
through the proxy nor counts as activity, so a server idle again after a long run is culled one
timeout after its last message. A server that does not answer is culled as before.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import timedelta
from typing import Any

from tornado.httpclient import AsyncHTTPClient, HTTPClientError

# A child of the culler application's logger (traitlets names it after the class), so lines land in its log.
log = logging.getLogger("IdleCuller.busy")


async def _get_json(url: str) -> Any:
    token = os.environ["JUPYTERHUB_API_TOKEN"]
    response = await AsyncHTTPClient().fetch(url, request_timeout=20, headers={"Authorization": f"token {token}"})
    return json.loads(response.body)


async def busy_kernels(server_url: str) -> int:
    """How many of the server's kernels are busy (0 when it cannot tell)."""
    try:
        # The server's own address, from the hub's copy of the proxy's table: asking through the
        # proxy would count as traffic on the user's route, which the hub takes for activity.
        routes = await _get_json(os.environ["JUPYTERHUB_API_URL"].rstrip("/") + "/proxy")
        target = str(routes[server_url]["target"]).rstrip("/")
        # no_track_activity: jupyter_server does not count this request as the user's activity.
        kernels = await _get_json(f"{target}{server_url}api/kernels?no_track_activity=1")
    except (HTTPClientError, OSError, KeyError, ValueError) as exc:
        log.warning("could not list the kernels of %s (%s): culling by activity alone", server_url, exc)
        return 0
    return sum(1 for kernel in kernels if kernel.get("execution_state") == "busy")


async def busy_aware_arbiter(*, inactive: timedelta, inactive_limit: int, server: dict[str, Any],
                             **_: Any) -> bool:
    """Cull when idle past the limit and no kernel is busy."""
    if inactive.total_seconds() < inactive_limit:
        return False
    busy = await busy_kernels(str(server.get("url") or ""))
    if busy:
        log.info("not culling %s: inactive for %s but %d kernel(s) busy", server.get("url"), inactive, busy)
        return False
    return True


c = get_config()  # type: ignore[name-defined]  # noqa: F821 - traitlets' config loader defines it
c.IdleCuller.cull_arbiter_hook = busy_aware_arbiter
