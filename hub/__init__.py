"""The team hub: JupyterHub + DockerSpawner on one GPU box, run on the host (docs/hub.md).

settings reads and checks every HUB_* variable; ctl starts and stops the proxy and the hub;
jupyterhub_config.py and spawner.py are what the hub process loads; culler_config.py is the idle
culler's. Only settings and ctl's pure parts import without the hub's venv (hub/.venv).
"""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
