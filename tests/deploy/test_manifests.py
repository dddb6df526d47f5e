"""deploy/k8s's plain manifests, and the Kubernetes objects inside the values file, against the
Kubernetes API schemas (kubernetes-validate, strict: unknown fields fail). Its wheel carries the
schemas, so this runs offline. Versions: the oldest the chart supports (Z2JH 4.4.0 needs 1.28)
and the newest the pinned kubernetes-validate knows."""

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from kubernetes_validate import utils as kv_utils

from tests.deploy.chart import MANIFESTS, Values, merged_values

OLDEST = "1.28"
KUBERNETES_VERSIONS = [OLDEST, ".".join(kv_utils.latest_version().split(".")[:2])]
EXAMPLE_USER = "alice"  # the user deploy/k8s/ssh-user.yaml is written for


def manifest_files() -> list[Path]:
    files = sorted(MANIFESTS.glob("*.yaml"))
    assert files, f"no manifests in {MANIFESTS}"
    return files


def documents(path: Path) -> list[dict[str, Any]]:
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    assert docs and all(isinstance(doc, dict) for doc in docs), f"{path}: expected Kubernetes objects"
    return docs


def validate(obj: dict[str, Any], version: str) -> None:
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        where = ".".join(map(str, exc.path))
        raise AssertionError(f"{obj['kind']} {obj['metadata'].get('name')} at {where}: {exc.message}") from None


def minor(version: str) -> tuple[int, int]:
    major, minor_, *_ = version.split(".")
    return int(major), int(minor_)


def test_versions_are_known() -> None:
    assert minor(OLDEST) in {minor(version) for version in kv_utils.all_versions()}
    assert minor(KUBERNETES_VERSIONS[1]) >= minor(OLDEST)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", manifest_files(), ids=lambda path: path.name)
def test_manifests_are_valid(path: Path, version: str) -> None:
    for doc in documents(path):
        validate(doc, version)


def ssh_objects() -> dict[str, dict[str, Any]]:
    found = {doc["kind"]: doc for doc in documents(MANIFESTS / "ssh-user.yaml")}
    assert set(found) == {"Secret", "Service"}, set(found)
    return found


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_a_misspelled_field_fails(version: str) -> None:
    service = copy.deepcopy(ssh_objects()["Service"])
    service["spec"]["ports"][0]["targetport"] = service["spec"]["ports"][0].pop("targetPort")
    with pytest.raises(AssertionError, match="targetport"):
        validate(service, version)


def test_ssh_manifests_fit_the_values() -> None:
    singleuser = merged_values()["singleuser"]
    secret, service = ssh_objects()["Secret"], ssh_objects()["Service"]
    ref = singleuser["extraEnv"]["SSH_AUTHORIZED_KEYS"]["valueFrom"]["secretKeyRef"]
    assert secret["metadata"]["name"] == ref["name"].format(username=EXAMPLE_USER)
    assert ref["key"] in secret["stringData"]
    # KubeSpawner's labels on a user's server pod.
    assert service["spec"]["selector"] == {"component": "singleuser-server", "hub.jupyter.org/username": EXAMPLE_USER}
    target = service["spec"]["ports"][0]["targetPort"]
    assert target == int(singleuser["extraEnv"]["SSH_PORT"])
    assert target in singleuser["networkPolicy"]["allowedIngressPorts"]


def user_pod(values: Values, profile: dict[str, Any]) -> dict[str, Any]:
    """The parts of the pod KubeSpawner makes from these values that the values spell in
    Kubernetes' own terms (volumes, mounts, env, security context, tolerations, resources), for
    the example user, with the profile's overrides applied as KubeSpawner does (maps merged)."""
    singleuser = values["singleuser"]
    override = profile["kubespawner_override"]
    storage = singleuser["storage"]
    volume = storage["dynamic"]["volumeNameTemplate"]
    env = {**singleuser["extraEnv"], **override.get("environment", {})}
    # KubeSpawner writes mem_limit in bytes; its G is Kubernetes' Gi (JupyterHub's ByteSpecification).
    limits = {"cpu": str(override["cpu_limit"]), "memory": str(override["mem_limit"]) + "i",
              **override.get("extra_resource_limits", {})}
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "jupyter-{username}"},
        "spec": {
            "securityContext": {"fsGroup": singleuser["fsGid"]},
            "tolerations": singleuser["extraTolerations"],
            **singleuser["extraPodConfig"],  # KubeSpawner sets these on the pod's spec as they are
            "volumes": [{"name": volume, "persistentVolumeClaim": {"claimName": "claim-{username}"}},
                        *storage["extraVolumes"]],
            "containers": [{
                "name": "notebook",
                "image": f"{singleuser['image']['name']}:{singleuser['image']['tag']}",
                "args": [singleuser["cmd"]],
                "env": [{"name": name, "value": value} if isinstance(value, str) else {"name": name, **value}
                        for name, value in env.items()],
                "resources": {"limits": limits},
                "securityContext": {"runAsUser": singleuser["uid"],
                                    "allowPrivilegeEscalation": singleuser["allowPrivilegeEscalation"],
                                    **values["hub"]["config"]["KubeSpawner"]["container_security_context"]},
                "volumeMounts": [{"name": volume, "mountPath": storage["homeMountPath"],
                                  "subPath": storage["dynamic"]["subPath"]}, *storage["extraVolumeMounts"]],
            }],
        },
    }
    expanded = yaml.safe_dump(pod).replace("{username}", EXAMPLE_USER).replace("{user_server}", EXAMPLE_USER)
    result: dict[str, Any] = yaml.safe_load(expanded)
    return result


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_values_kubernetes_parts_make_a_valid_pod(version: str) -> None:
    values = merged_values()
    for profile in values["singleuser"]["profileList"]:
        pod = user_pod(values, profile)
        mounts = pod["spec"]["containers"][0]["volumeMounts"]
        assert {mount["name"] for mount in mounts} <= {volume["name"] for volume in pod["spec"]["volumes"]}
        validate(pod, version)


def test_a_broken_volume_in_the_values_fails() -> None:
    values = merged_values()
    values["singleuser"]["storage"]["extraVolumes"][0]["emptyDir"]["sizelimit"] = "4Gi"
    with pytest.raises(AssertionError, match="sizelimit"):
        validate(user_pod(values, values["singleuser"]["profileList"][0]), OLDEST)
