# shellcheck shell=sh
# The first line of /etc/profile (the Dockerfile puts it there): every login shell (a JupyterLab
# terminal, `docker exec ... bash -l`, an SSH session, a dev container's environment probe) keeps
# the PATH it was given before Debian's /etc/profile replaces it with the distro's default.
# shellcheck disable=SC2034 # read by /etc/profile.d/tf29-env.sh, sourced later by /etc/profile
TFENV_LOGIN_PATH=${PATH-}
