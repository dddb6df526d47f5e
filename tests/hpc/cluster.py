"""A Slurm cluster of containers for tests/hpc (issue 28): a login machine running slurmctld and
sshd, and two compute nodes running slurmd and Apptainer, on a private network of their own, with a
shared MUNGE key and shared volumes for the cluster's files (/cluster), the users' homes (/home) and
the SIF (/shared, read-only), as a real cluster shares them over NFS. Slurm 24.11 and MUNGE from
Debian 13; process tracking without cgroups (the containers have none of their own to give)."""

import io
import os
import tarfile
import uuid
from dataclasses import dataclass, field

from docker import DockerClient
from docker.models.networks import Network

from testkit import hpc
from testkit.wait import wait_until
from tf29env.core.paths import REPO

SLURM_CONF = """\
ClusterName=tf29
SlurmctldHost=login
AuthType=auth/munge
SlurmUser=slurm
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
KillWait=10
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
# A requeued job may start again cred_expire + 1 s later (Slurm's default 120) at the next scheduling
# pass (backfill's default 30 s): test_jobs.py's requeued run starts within about 40 s instead of 150.
AuthInfo=cred_expire=30
SchedulerParameters=bf_interval=5
# Nodes the size of a real cluster's, as Slurm counts them (config_overrides: the machines have less),
# and a site's usual limits: docs/hpc.md's lines (4 CPUs, 16 GB and 4 h by default, 32 GB and 8 h on
# the gpu partition, srun without --mem) are typed as written, two of its jobs beside the tests' own.
DefMemPerCPU=1000
GresTypes=gpu
NodeName=node1 CPUs=16 RealMemory=64000 Gres=gpu:1 State=UNKNOWN
NodeName=node2 CPUs=16 RealMemory=64000 State=UNKNOWN
PartitionName=cpu Nodes=node1,node2 Default=YES MaxTime=12:00:00 State=UP
PartitionName=gpu Nodes=node1 MaxTime=12:00:00 State=UP
"""
# node1's GPU stands on /dev/null (Slurm 24 ignores a GPU without a device file): Slurm schedules it
# (a --gres=gpu:1 job runs there, --gres=gpu:2 is refused at submission) while the machine has no GPU.
GRES_CONF = "NodeName=node1 Name=gpu File=/dev/null\n"
CGROUP_CONF = "CgroupPlugin=disabled\n"
SLURM_DIR = REPO / "deploy" / "slurm"
SLURM_SCRIPTS = "/opt/tf29-env-slurm"  # SLURM_DIR on every machine, read-only
# slurmd, root on a real node, loads a user's login environment for a job whose --export names
# variables without ALL (batchspawner's jobs) in a mount namespace of its own: clone(CLONE_NEWNS)
# needs SYS_ADMIN, which Docker's root lacks. The users' jobs get no capability from it.
NODE_CAPABILITIES = ["SYS_ADMIN"]


def tar_of(files: dict[str, tuple[bytes, int]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, (data, mode) in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class Cluster:
    client: DockerClient
    node_image: str
    login_image: str
    sif: str
    users: str
    network: Network | None = None
    machines: dict[str, hpc.Machine] = field(default_factory=dict)
    volumes: list[str] = field(default_factory=list)

    def up(self) -> None:
        suffix = uuid.uuid4().hex[:10]
        self.network = self.client.networks.create(f"tf29-hpc-{suffix}", driver="bridge", internal=False)
        for part in ("cluster", "home"):
            self.volumes.append(self.client.volumes.create(f"tf29-hpc-{suffix}-{part}").name)
        cluster, home = self.volumes
        shared = {cluster: {"bind": "/cluster", "mode": "rw"}, home: {"bind": "/home", "mode": "rw"},
                  self.sif: {"bind": "/shared", "mode": "ro"},
                  str(SLURM_DIR): {"bind": SLURM_SCRIPTS, "mode": "ro"}}
        # The cluster's files, written into the shared volume before any machine starts.
        seed = self.client.containers.create(self.node_image, ["true"], volumes=shared)
        try:
            seed.put_archive("/cluster", tar_of({
                "slurm.conf": (SLURM_CONF.encode(), 0o644), "gres.conf": (GRES_CONF.encode(), 0o644),
                "cgroup.conf": (CGROUP_CONF.encode(), 0o644), "munge.key": (os.urandom(1024), 0o400)}))
        finally:
            seed.remove(force=True)
        network = self.network.name
        self.machines["login"] = hpc.start_machine(self.client, self.login_image, role="controller", users=self.users,
                                                   hostname="login", volumes=shared, publish=(22, 8000),
                                                   network=network)
        for node in ("node1", "node2"):
            self.machines[node] = hpc.start_machine(
                self.client, self.node_image, role="node", users=self.users, hostname=node, volumes=shared,
                publish=(8888, 8889), network=network, environment={"HPC_NODE": node}, cap_add=NODE_CAPABILITIES)
        wait_until(self.nodes_idle, timeout=120, interval=1, what="node1 and node2 idle in sinfo")

    def nodes_idle(self) -> bool:
        code, out = self.login.run("sinfo -h -N -o '%N %t' | sort -u")
        return code == 0 and out.split() == ["node1", "idle", "node2", "idle"]

    @property
    def login(self) -> hpc.Machine:
        return self.machines["login"]

    def down(self) -> None:
        for machine in self.machines.values():
            machine.container.remove(force=True, v=True)
        self.machines.clear()
        if self.network is not None:
            self.network.remove()
        for name in self.volumes:
            self.client.volumes.get(name).remove(force=True)
        self.volumes.clear()
