"""What the cluster values must agree with, read from its one home in the image's sources: the dev
user's name and ids (the Dockerfile's ARGs), the GPUs the image exposes by default (its ENV), and
the capabilities the entrypoint needs as root (image/python/tf29image/startup/privileges.py:
check_capabilities)."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
PLANNER = REPO / "image" / "python" / "tf29image" / "startup" / "privileges.py"

# Kubernetes' "baseline" Pod Security Standard allows adding only these capabilities
# (kubernetes.io/docs/concepts/security/pod-security-standards, "Capabilities").
BASELINE_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})
# The planner's need() takes DAC_OVERRIDE for DAC_READ_SEARCH (it allows all the other does).
STANDS_IN_FOR = {"DAC_READ_SEARCH": "DAC_OVERRIDE"}


def dockerfile_arg(name: str) -> str:
    match = re.search(rf"^ARG {name}=(\S+)$", DOCKERFILE.read_text(), re.MULTILINE)
    assert match, f"the Dockerfile has no ARG {name}=...: has the dev user's setup moved?"
    return match[1]


def dockerfile_env(name: str) -> str:
    match = re.search(rf"^(?:ENV\s+|\s+){name}=(\S+?)\s*\\?$", DOCKERFILE.read_text(), re.MULTILINE)
    assert match, f"the Dockerfile's ENV does not set {name}"
    return match[1]


def home() -> str:
    return f"/home/{dockerfile_arg('NB_USER')}"


def needed_capabilities() -> set[str]:
    """Every capability the entrypoint may ask for as root (the planner's need("NAME", ...) calls)."""
    names = set(re.findall(r"\bneed\(\"([A-Z_]+)\"", PLANNER.read_text()))  # calls, not comments
    assert {"SETUID", "SETGID", "SYS_CHROOT"} <= names, f"{PLANNER}: need() calls not found: {names}"
    return names
