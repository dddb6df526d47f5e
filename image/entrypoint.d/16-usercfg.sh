# shellcheck shell=bash
# 16-usercfg: the dev user as built. docker-stacks' user
# settings (NB_GROUP, NB_UMASK, CHOWN_*, GRANT_SUDO, the root triplet) are checked by startup/plan.py.

# The dev user as built: the Dockerfile's NB_USER, which the image's ENV keeps in TFENV_IMAGE_USER
# (NB_USER itself is the user's to override).
[[ -n ${TFENV_IMAGE_USER:-} ]] ||
  die "TFENV_IMAGE_USER is not set: the image's ENV sets it; do not override it with an empty value"
readonly IMAGE_USER=${TFENV_IMAGE_USER}
# The image-side helper that writes passwd/group copies (20-user).
readonly USERS_PY=/opt/tf29-env/startup/users.py
