"""The tests' SIF cache: one volume per image id (2.5 GB each), removed once no tag names its image."""

import uuid

from docker import DockerClient

from testkit import hpc


def test_a_stale_sif_volume_goes_and_the_current_one_stays(docker_client: DockerClient, sif: str) -> None:
    stale = docker_client.volumes.create(f"{hpc.SIF_VOLUME_PREFIX}{uuid.uuid4().hex[:16]}")
    said: list[str] = []
    hpc.prune_sif_volumes(docker_client, said.append)
    left = {volume.name for volume in docker_client.volumes.list(filters={"name": hpc.SIF_VOLUME_PREFIX})}
    assert stale.name not in left
    assert sif in left
    assert f"removed {stale.name}: no tagged image has that id any more" in said
