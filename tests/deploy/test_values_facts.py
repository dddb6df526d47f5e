"""The facts of deploy/z2jh/values.yaml that the schema cannot see (profileList entries,
extraEnv and hub.config are free-form there): GPU counts, the CPU profile's hidden GPUs, /dev/shm,
storage, the image reference build.py makes, the root start and its capabilities, SSH, culling, the
stop's grace and idle kernels."""

import re
from typing import Any

import pytest

from compose import limits
from tests.deploy import image_facts
from tests.deploy.chart import Values, merged_values, our_values
from tf29env.core import variants
from tf29env.release import push, tags

GPU_RESOURCE = "nvidia.com/gpu"
WANTED_GPUS = {"cpu": None, "gpu-1": "1", "gpu-2": "2"}
SHM = "/dev/shm"  # noqa: S108 (a mount point named, not a file made)


@pytest.fixture(scope="module")
def values() -> Values:
    return merged_values()


@pytest.fixture(scope="module")
def singleuser(values: Values) -> dict[str, Any]:
    section: dict[str, Any] = values["singleuser"]
    return section


def profiles(singleuser: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {profile["slug"]: profile for profile in singleuser["profileList"]}


def override(singleuser: dict[str, Any], slug: str) -> dict[str, Any]:
    found: dict[str, Any] = profiles(singleuser)[slug]["kubespawner_override"]
    return found


# Kubernetes quantities (an emptyDir's sizeLimit) and JupyterHub's byte specifications (KubeSpawner's
# mem_limit, where G means GiB, as JupyterHub's ByteSpecification reads it).
KUBE_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
              "Ti": 2**40}
SPAWNER_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def in_bytes(value: str | int, units: dict[str, int]) -> int:
    match = re.fullmatch(r"(\d+)([A-Za-z]*)", str(value))
    assert match and match[2] in units, f"{value!r}: not a size in {sorted(units)}"
    return int(match[1]) * units[match[2]]


def test_sizes() -> None:
    assert in_bytes("4Gi", KUBE_UNITS) == 4 * 2**30
    assert in_bytes("16G", KUBE_UNITS) == 16 * 10**9
    assert in_bytes("16G", SPAWNER_UNITS) == 16 * 2**30
    with pytest.raises(AssertionError):
        in_bytes("16GB", SPAWNER_UNITS)


def test_profiles_cpu_one_and_two_gpus(singleuser: dict[str, Any]) -> None:
    found = profiles(singleuser)
    assert list(found) == list(WANTED_GPUS)
    for slug, gpus in WANTED_GPUS.items():
        limits = found[slug]["kubespawner_override"].get("extra_resource_limits", {})
        assert limits.get(GPU_RESOURCE) == gpus, (slug, limits)
        assert set(limits) <= {GPU_RESOURCE}, (slug, limits)
    assert [slug for slug, profile in found.items() if profile.get("default")] == ["cpu"]
    # No GPU by default, for anyone: the chart-wide limits hold none.
    assert GPU_RESOURCE not in (singleuser["extraResource"]["limits"] or {})


def test_cpu_profile_hides_the_images_gpus(singleuser: dict[str, Any]) -> None:
    # The image exposes every GPU unless told otherwise; a CPU server on a GPU node must see none.
    assert image_facts.dockerfile_env("NVIDIA_VISIBLE_DEVICES") == "all"
    assert override(singleuser, "cpu")["environment"]["NVIDIA_VISIBLE_DEVICES"] == "void"


def test_only_the_cpu_profile_sets_visible_devices(singleuser: dict[str, Any]) -> None:
    # The device plugin sets it to the GPUs it allocated; a value from the pod spec would compete.
    assert "NVIDIA_VISIBLE_DEVICES" not in singleuser["extraEnv"]
    for slug in ("gpu-1", "gpu-2"):
        assert "NVIDIA_VISIBLE_DEVICES" not in override(singleuser, slug).get("environment", {}), slug


def shm_limit(singleuser: dict[str, Any]) -> int:
    mounts = [mount for mount in singleuser["storage"]["extraVolumeMounts"] if mount["mountPath"] == SHM]
    assert len(mounts) == 1, singleuser["storage"]["extraVolumeMounts"]
    volume = {volume["name"]: volume for volume in singleuser["storage"]["extraVolumes"]}[mounts[0]["name"]]
    assert volume["emptyDir"]["medium"] == "Memory", volume
    return in_bytes(volume["emptyDir"]["sizeLimit"], KUBE_UNITS)


def test_shm_is_a_memory_emptydir_with_a_size_limit(singleuser: dict[str, Any]) -> None:
    assert shm_limit(singleuser) >= 2**30  # well above the runtime's 64 MiB


@pytest.mark.parametrize("slug", list(WANTED_GPUS))
def test_memory_limits_leave_room_for_shm(singleuser: dict[str, Any], slug: str) -> None:
    # What is written to a memory-backed /dev/shm counts against the pod's memory limit.
    settings = override(singleuser, slug)
    limit = in_bytes(settings["mem_limit"], SPAWNER_UNITS)
    assert limit >= 2 * shm_limit(singleuser), settings
    assert in_bytes(settings["mem_guarantee"], SPAWNER_UNITS) <= limit, settings


def test_storage_keeps_work_cuda_cache_host_keys_and_local(singleuser: dict[str, Any]) -> None:
    """The user's volume in parts: notebooks, the CUDA JIT cache, the SSH host keys and ~/.local, the
    user's packages and settings (docs/packages.md)."""
    storage = singleuser["storage"]
    home = image_facts.home()
    assert storage["type"] == "dynamic"
    assert storage["homeMountPath"] == f"{home}/work"
    user_volume = storage["dynamic"]["volumeNameTemplate"]
    sub_paths = {storage["homeMountPath"]: storage["dynamic"]["subPath"]}
    sub_paths |= {mount["mountPath"]: mount.get("subPath") for mount in storage["extraVolumeMounts"]
                  if mount["name"] == user_volume}
    assert set(sub_paths) == {f"{home}/work", f"{home}/.nv", "/etc/ssh/host-keys", f"{home}/.local"}, sub_paths
    assert None not in sub_paths.values() and len(set(sub_paths.values())) == 4, sub_paths


def test_image_is_a_pinned_build_py_tag(singleuser: dict[str, Any]) -> None:
    name, tag = singleuser["image"]["name"], singleuser["image"]["tag"]
    tags.validate_repository(name, "singleuser.image.name")
    registry = name.split("/", 1)[0]
    assert push.path_of(name) == variants.REPOSITORY and registry != name, (
        f"{name}: expected REGISTRY/{variants.REPOSITORY}, as build.py push names it")
    push.parse_registry(registry)
    match = tags.SHA_RE.fullmatch(tag)
    assert match, f"{tag}: pin the git-SHA tag (VARIANT-<12 hex>), which never moves"
    assert match["variant"] == variants.DEFAULT_VARIANT == "gpu", tag  # the CUDA build serves every profile
    assert tags.split_reference(f"{name}:{tag}") == (name, tag)
    assert singleuser["image"]["pullPolicy"] == "IfNotPresent"


def test_hub_mode_command(singleuser: dict[str, Any]) -> None:
    assert singleuser["cmd"] == "jupyterhub-singleuser"


def test_root_start_drops_to_the_images_user(singleuser: dict[str, Any]) -> None:
    assert singleuser["uid"] == 0
    assert singleuser["fsGid"] == int(image_facts.dockerfile_arg("NB_GID"))
    assert singleuser["allowPrivilegeEscalation"] is False
    # The entrypoint drops to the image's NB_UID/NB_GID; nothing here moves them.
    assert not {"NB_UID", "NB_GID", "NB_USER"} & set(singleuser["extraEnv"])


def test_capabilities_are_what_the_entrypoint_needs_within_baseline(values: Values) -> None:
    context = values["hub"]["config"]["KubeSpawner"]["container_security_context"]
    added = set(context["capabilities"]["add"])
    assert context["capabilities"]["drop"] == ["ALL"]
    assert added <= image_facts.BASELINE_CAPABILITIES, added - image_facts.BASELINE_CAPABILITIES
    needed = image_facts.needed_capabilities()
    if int(values["singleuser"]["extraEnv"]["SSH_PORT"]) >= 1024:
        needed.discard("NET_BIND_SERVICE")
    missing = {name for name in needed if name not in added and image_facts.STANDS_IN_FOR.get(name) not in added}
    assert not missing, f"the entrypoint needs {sorted(missing)} as root"
    surplus = added - needed - set(image_facts.STANDS_IN_FOR.values())
    assert not surplus, f"{sorted(surplus)} added, but the entrypoint needs none of them"


def test_ssh_keys_come_from_an_optional_per_user_secret(singleuser: dict[str, Any]) -> None:
    env = singleuser["extraEnv"]
    ref = env["SSH_AUTHORIZED_KEYS"]["valueFrom"]["secretKeyRef"]
    assert "{username}" in ref["name"] and ref["optional"] is True, ref
    assert "SSH_AUTHORIZED_KEYS_FILE" not in env  # both set stops the start
    port = int(env["SSH_PORT"])
    assert port in singleuser["networkPolicy"]["allowedIngressPorts"]


def test_gpu_nodes_taint_is_tolerated_by_every_user_pod(singleuser: dict[str, Any]) -> None:
    assert {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"} in singleuser["extraTolerations"]
    for slug in WANTED_GPUS:  # a profile's list would replace the chart's tolerations (see the file)
        assert "tolerations" not in override(singleuser, slug), slug


def test_culling_spares_long_runs_but_returns_gpus(values: Values) -> None:
    cull = values["cull"]
    assert cull["enabled"] is True
    assert 3600 <= cull["timeout"] <= 24 * 3600, cull
    assert cull["every"] < cull["timeout"] and cull["maxAge"] == 0 and cull["users"] is False, cull


def test_a_stop_gives_the_runs_their_grace(values: Values, singleuser: dict[str, Any]) -> None:
    """The entrypoint interrupts jobs and busy kernels and waits STOP_GRACE_SECONDS; whatever ends the pod
    must wait that and the services' own stop: the hub's delete (KubeSpawner's delete_grace_period, which
    overrides the pod's) and every other termination (terminationGracePeriodSeconds)."""
    grace = limits.stop_grace(singleuser["extraEnv"]["STOP_GRACE_SECONDS"])  # the range the image takes
    team = limits.load()
    assert grace == team.stop_grace, "the team setups' grace (docker-compose.yml's x-member-env)"
    wait = grace + limits.STOP_MARGIN
    assert values["hub"]["config"]["KubeSpawner"]["delete_grace_period"] == wait
    assert singleuser["extraPodConfig"]["terminationGracePeriodSeconds"] == wait


def test_idle_kernels_are_shut_down_before_their_server_is_culled(values: Values,
                                                                   singleuser: dict[str, Any]) -> None:
    idle = singleuser["extraEnv"]["KERNEL_IDLE_TIMEOUT"]
    assert isinstance(idle, str) and idle.isdigit(), idle  # a pod's environment holds strings
    assert int(idle) == limits.load().kernel_idle, "the team setups' timeout (docker-compose.yml's x-member-env)"
    assert 0 < int(idle) <= values["cull"]["timeout"], (idle, values["cull"])


def test_no_open_login_and_the_charts_hub_image(values: Values) -> None:
    assert values["hub"]["config"]["JupyterHub"]["authenticator_class"] != "dummy"
    # The hub version comes with the pinned chart (docs/cluster.md#versions): not overridden here.
    assert "image" not in our_values()["hub"]
