"""deploy/z2jh/values.yaml's team data and GPU memory budget (docs/cluster.md): the claim team-data
mounted read-only at /home/jovyan/data in every server, and GPU_MEMORY_LIMIT_MB in each GPU profile's
environment (the image's budget), none in the CPU profile."""

from typing import Any

from tests.deploy.chart import merged_values

DATA = "/home/jovyan/data"


def singleuser() -> dict[str, Any]:
    section: dict[str, Any] = merged_values()["singleuser"]
    return section


def test_team_data_is_a_read_only_claim_at_home_data() -> None:
    storage = singleuser()["storage"]
    (volume,) = [v for v in storage["extraVolumes"] if v["name"] == "team-data"]
    assert volume["persistentVolumeClaim"] == {"claimName": "team-data", "readOnly": True}
    (mount,) = [m for m in storage["extraVolumeMounts"] if m["mountPath"] == DATA]
    assert mount == {"name": "team-data", "mountPath": DATA, "readOnly": True}


def test_each_gpu_profile_carries_the_budget() -> None:
    for profile in singleuser()["profileList"]:
        override = profile["kubespawner_override"]
        environment = override.get("environment", {})
        if "nvidia.com/gpu" in override.get("extra_resource_limits", {}):
            assert "GPU_MEMORY_LIMIT_MB" in environment, profile["slug"]
            value = environment["GPU_MEMORY_LIMIT_MB"]
            assert isinstance(value, str) and (value == "" or value.isdigit()), (profile["slug"], value)
        else:
            assert "GPU_MEMORY_LIMIT_MB" not in environment, profile["slug"]
