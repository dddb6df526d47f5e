# shellcheck shell=sh
# /etc/profile.d/tf29-env.sh: the one place that sets a login shell's environment. /etc/profile
# reset PATH (on Debian); put back the PATH the shell was given (login-start.sh kept it), so that
# python, pip, jupyter and tensorboard are the venv's in every kind of shell. Nothing else is
# changed: the rest of the environment was never reset, and secrets were never in it.
if [ -n "${TFENV_LOGIN_PATH:-}" ]; then
  PATH=${TFENV_LOGIN_PATH}
  export PATH
fi
unset TFENV_LOGIN_PATH
