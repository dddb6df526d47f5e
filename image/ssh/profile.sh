# shellcheck shell=sh
# Login shells (ssh sessions, `bash -l`) run /etc/profile, which resets PATH to the distro's
# default: put back the container's PATH, which sshd handed over in TFENV_CONTAINER_PATH.
if [ -n "${TFENV_CONTAINER_PATH:-}" ]; then
  PATH=${TFENV_CONTAINER_PATH}
  export PATH
fi
