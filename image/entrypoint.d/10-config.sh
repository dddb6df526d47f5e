# shellcheck shell=bash
# 10-config: read and check every setting before anything starts. A bad value stops the
# container with one line naming the variable (exit 2); nothing is left half-started.

load_config() {
  is_root=0
  if ((EUID == 0)); then is_root=1; fi

  local name
  for name in NB_UID NB_GID; do
    if [[ ! ${!name} =~ ^[0-9]{1,10}$ ]] || ((10#${!name} > 2147483647)); then
      die "${name}='${!name}' is not a numeric id (0-2147483647)"
    fi
  done
  ((10#${NB_UID} != 0)) || die "NB_UID=0: JupyterLab and SSH logins never run as root; pick another uid"
  [[ ${NB_USER} =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] || die "NB_USER='${NB_USER}' is not a valid user name"

  cfg_jupyter=1 cfg_ssh=1 cfg_no_auth=0
  parse_switch cfg_jupyter ENABLE_JUPYTER 1
  parse_switch cfg_ssh ENABLE_SSH 1
  parse_switch cfg_no_auth JUPYTER_INSECURE_NO_AUTH 0

  # SELF_CHECK's modes have one owner, the self-check (selfcheck/cli.py), which also reads SELF_CHECK
  # when run by hand: it answers warn, strict or off, or says in one line why the value is bad (exit 2).
  local answer status=0
  answer=$(/opt/tf29-env/bin/selfcheck --start-mode 2>&1) || status=$?
  answer=${answer##*$'\n'} # its last line: the mode, or why there is none
  case ${status} in
    0) cfg_self_check=${answer} ;;
    2) die "${answer#selfcheck: }" ;;
    *) die "SELF_CHECK: the self-check could not say which mode it sets (exit ${status}): ${answer}" ;;
  esac

  JUPYTER_PORT=${JUPYTER_PORT:-8888}
  check_port JUPYTER_PORT
  SSH_PORT=${SSH_PORT:-22}
  check_port SSH_PORT
  cfg_base_url=${JUPYTER_BASE_URL:-/}
  [[ ${cfg_base_url} =~ ^/[A-Za-z0-9._~/-]*$ ]] ||
    die "JUPYTER_BASE_URL='${cfg_base_url}' must be a path like /jupyter/ (letters, digits, . _ ~ - /)"
  [[ ${cfg_base_url} == */ ]] || cfg_base_url+=/
  cfg_host_key_dir=${SSH_HOST_KEY_DIR:-/etc/ssh/host-keys}
  [[ ${cfg_host_key_dir} == /* ]] || die "SSH_HOST_KEY_DIR='${cfg_host_key_dir}' must be an absolute path"

  load_jupyter_auth
  load_ssh_keys

  if ((!cfg_jupyter)) && { ((!cfg_ssh || !is_root)) || [[ -z ${cfg_ssh_keys} ]]; }; then
    die "ENABLE_JUPYTER=0 and no SSH to start (that needs ENABLE_SSH=1, root and a key): nothing to run"
  fi
}

# Jupyter always has auth: a token (given, from a file, or generated) and/or a hashed password,
# unless JUPYTER_INSECURE_NO_AUTH=1 says otherwise in so many words.
load_jupyter_auth() {
  cfg_token=""
  cfg_token_generated=0
  cfg_password_hash=${JUPYTER_PASSWORD_HASH:-}
  if [[ -n ${JUPYTER_TOKEN_FILE:-} ]]; then
    [[ -z ${JUPYTER_TOKEN:-} ]] || die "JUPYTER_TOKEN and JUPYTER_TOKEN_FILE are both set: set one"
    read_secret_file cfg_token JUPYTER_TOKEN_FILE
  else
    cfg_token=${JUPYTER_TOKEN:-}
  fi
  [[ ${cfg_token} =~ ^[[:graph:]]*$ ]] || die "JUPYTER_TOKEN${JUPYTER_TOKEN_FILE:+_FILE}: the token contains spaces or control characters"
  if [[ -n ${cfg_password_hash} && ! ${cfg_password_hash} =~ ^(argon2:\$argon2(id|i|d)\$|sha1:|sha256:)[[:graph:]]+$ ]]; then
    die "JUPYTER_PASSWORD_HASH is not a Jupyter password hash (argon2:... or sha1:...; make one with: python -c 'from jupyter_server.auth import passwd; print(passwd())')"
  fi
  if ((cfg_no_auth)); then
    [[ -z ${cfg_token}${cfg_password_hash} ]] ||
      die "JUPYTER_INSECURE_NO_AUTH=1 together with a token or password: drop one of them"
  elif [[ -z ${cfg_token} && -z ${cfg_password_hash} ]]; then
    cfg_token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
    cfg_token_generated=1
  fi
}

# SSH is key-only: the keys come from SSH_AUTHORIZED_KEYS or SSH_AUTHORIZED_KEYS_FILE, and each
# line must be a public key that ssh-keygen can read.
load_ssh_keys() {
  cfg_ssh_keys=""
  local source_name=SSH_AUTHORIZED_KEYS
  if [[ -n ${SSH_AUTHORIZED_KEYS_FILE:-} ]]; then
    [[ -z ${SSH_AUTHORIZED_KEYS:-} ]] || die "SSH_AUTHORIZED_KEYS and SSH_AUTHORIZED_KEYS_FILE are both set: set one"
    read_secret_file cfg_ssh_keys SSH_AUTHORIZED_KEYS_FILE
    source_name=SSH_AUTHORIZED_KEYS_FILE
  else
    cfg_ssh_keys=${SSH_AUTHORIZED_KEYS:-}
  fi
  [[ -n ${cfg_ssh_keys} ]] || return 0
  # Without root there is no sshd (40-ssh says so once), and ssh-keygen refuses to run for a
  # uid that has no passwd entry: nothing to check.
  ((is_root)) || return 0
  local line number=0 scratch
  scratch=$(mktemp)
  while IFS= read -r line || [[ -n ${line} ]]; do
    number=$((number + 1))
    line=${line%$'\r'}
    [[ -n ${line//[[:space:]]/} && ${line} != \#* ]] || continue
    printf '%s\n' "${line}" >"${scratch}"
    if ! ssh-keygen -l -f "${scratch}" >/dev/null 2>&1; then
      rm -f "${scratch}"
      die "${source_name}: line ${number} is not an SSH public key (expected e.g. 'ssh-ed25519 AAAA... you@host')"
    fi
  done <<<"${cfg_ssh_keys}"
  rm -f "${scratch}"
}
