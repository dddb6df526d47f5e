#!/usr/bin/env bash
# A machine of the test cluster (tests/hpc): the users, MUNGE with the cluster's key, then its role
# (HPC_ROLE): controller (slurmctld and sshd, the login node), node (slurmd as HPC_NODE) or box
# (Apptainer only). The cluster's files are in /cluster, shared by every machine: slurm.conf,
# gres.conf, munge.key; the users' homes in /home, shared too.
set -euo pipefail

# HPC_USERS="alice:2001 bob:2002": the same uids on every machine, as a cluster's directory gives.
for entry in ${HPC_USERS:-}; do
  name=${entry%%:*} uid=${entry#*:}
  getent passwd "${name}" >/dev/null || useradd --no-create-home --home-dir "/home/${name}" --uid "${uid}" \
    --user-group --shell /bin/bash "${name}"
done

if [[ -f /cluster/munge.key ]]; then
  install -o munge -g munge -m 400 /cluster/munge.key /etc/munge/munge.key
  runuser -u munge -- /usr/sbin/munged
fi
for file in slurm.conf gres.conf cgroup.conf; do
  [[ ! -f /cluster/${file} ]] || ln -sf "/cluster/${file}" "/etc/slurm/${file}"
done

# /dev/fuse is every user's (0666, as the fuse package's udev rule makes it on a host); --device gives
# the container the host's mode, which on some hosts is root's alone, and Apptainer runs as the users.
[[ ! -c /dev/fuse ]] || chmod 666 /dev/fuse

case ${HPC_ROLE:-box} in
  controller)
    /usr/sbin/sshd
    exec /usr/sbin/slurmctld -D
    ;;
  node) exec /usr/sbin/slurmd -D -N "${HPC_NODE:?}" ;;
  box) exec sleep infinity ;;
  *)
    echo "tf29-hpc: unknown HPC_ROLE=${HPC_ROLE}" >&2
    exit 2
    ;;
esac
