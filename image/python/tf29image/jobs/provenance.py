"""What a job ran on, for job.json: the image as its SBOM names it (version, revision, build time,
base digest, serial: an image cannot know its own digest), TensorFlow's version and build, the GPUs
the container was given and the driver. Read without importing TensorFlow (seconds and memory a
supervisor should not spend)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from typing import Any

SBOM = "/usr/share/doc/tf29-env/sbom.cdx.json"
OCI = "org.opencontainers.image."
IMAGE_PROPERTIES = ("version", "revision", "created", "base.name", "base.digest")
NVIDIA_SMI_TIMEOUT = 10


def image() -> dict[str, str]:
    try:
        with open(SBOM, encoding="utf-8") as sbom_file:
            document = json.load(sbom_file)
    except (OSError, ValueError):
        return {}
    component = document.get("metadata", {}).get("component", {})
    properties = {str(p.get("name", "")): str(p.get("value", "")) for p in component.get("properties", [])}
    found = {"name": str(component.get("name", "")), "sbom_serial": str(document.get("serialNumber", ""))}
    found.update({key: properties[OCI + key] for key in IMAGE_PROPERTIES if OCI + key in properties})
    return found


def tensorflow() -> dict[str, Any]:
    """The installed TensorFlow's version and build_info (the dict literal TensorFlow's own
    tf.sysconfig.get_build_info returns), from the files."""
    from importlib import metadata  # noqa: PLC0415 - 3.8's stdlib, only here

    found: dict[str, Any] = {}
    for name in ("tensorflow", "tensorflow-cpu"):
        try:
            found = {"package": name, "version": metadata.version(name)}
            break
        except metadata.PackageNotFoundError:
            continue
    for folder in sys.path:
        path = os.path.join(folder, "tensorflow", "python", "platform", "build_info.py")
        if os.path.isfile(path):
            found["build"] = _build_info(path)
            break
    return found


def _build_info(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "build_info" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return {}
            return {str(k): str(v) for k, v in dict(value).items() if k in ("cuda_version", "cudnn_version",
                                                                              "is_cuda_build")}
    return {}


def gpus(environ: dict[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = {name: environ[name] for name in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
                             if name in environ}
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=index,name,uuid,driver_version",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=NVIDIA_SMI_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        found["devices"] = []
        return found
    devices: list[dict[str, str]] = []
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        fields = [field.strip() for field in line.split(",")]
        if len(fields) == 4:
            devices.append({"index": fields[0], "name": fields[1], "uuid": fields[2]})
            found["driver"] = fields[3]
    found["devices"] = devices
    return found


def collect(environ: dict[str, str]) -> dict[str, Any]:
    return {"image": image(), "tensorflow": tensorflow(), "gpus": gpus(environ),
            "host": environ.get("HOSTNAME", "") or os.uname().nodename}
