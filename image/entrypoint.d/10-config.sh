# shellcheck shell=bash
# 10-config: read and check every setting before anything starts. A bad value stops the
# container with one line naming the variable (exit 2); nothing is left half-started.

# The longest value each variable may have, in the order they are checked. Each is far above any
# real value: the bound is there because a runaway one (a 70 KB base URL, a file's contents pasted
# into a variable) passes the other checks and fails later and obscurely (a Jupyter that answers
# nothing, "Argument list too long" when the environment reaches exec), or makes the error line
# quote all of itself. Checked first, so that no later message quotes such a value.
readonly SETTING_LIMITS=(
  NB_USER:32 NB_UID:10 NB_GID:10
  NB_GROUP:32 NB_UMASK:16 GRANT_SUDO:16 CHOWN_HOME:16 CHOWN_HOME_OPTS:1024 CHOWN_EXTRA:4096 CHOWN_EXTRA_OPTS:1024
  ENABLE_JUPYTER:16 ENABLE_SSH:16 JUPYTER_INSECURE_NO_AUTH:16 SELF_CHECK:16
  JUPYTER_PORT:16 SSH_PORT:16 JUPYTER_BASE_URL:1024 JUPYTER_ALLOWED_HOSTS:4096
  JUPYTER_TOKEN:1024 JUPYTER_TOKEN_FILE:1024 JUPYTER_PASSWORD_HASH:1024
  SSH_AUTHORIZED_KEYS:65536 SSH_AUTHORIZED_KEYS_FILE:1024 SSH_HOST_KEY_DIR:1024
  JUPYTER_RUNTIME_DIR:1024 TFENV_RUN_DIR:1024
  JUPYTERHUB_SERVICE_URL:2048 JUPYTERHUB_SERVICE_PREFIX:1024
  DOCKER_STACKS_JUPYTER_CMD:16 NOTEBOOK_ARGS:4096 JUPYTER_ENV_VARS_TO_UNSET:4096 GEN_CERT:16
)
# The largest file each *_FILE variable may name, in bytes: checked before it is read, so that a
# wrong file (a log, an archive) is refused instead of read into memory and into the environment.
# 2 MiB of keys: a large team's file (10,000 ed25519 keys are about 1 MB), which 40-ssh checks in
# one ssh-keygen pass.
readonly -A FILE_LIMITS=([JUPYTER_TOKEN_FILE]=4096 [SSH_AUTHORIZED_KEYS_FILE]=2097152)

load_config() {
  is_root=0
  if ((EUID == 0)); then is_root=1; fi
  check_lengths

  local name
  for name in NB_UID NB_GID; do
    if [[ ! ${!name} =~ ^[0-9]{1,10}$ ]] || ((10#${!name} > 2147483647)); then
      die "${name}='${!name}' is not a numeric id (0-2147483647)"
    fi
  done
  ((10#${NB_UID} != 0)) || root_triplet ||
    die "NB_UID=0: JupyterLab and SSH logins never run as root; pick another uid (only NB_USER=root NB_UID=0 NB_GID=0 together run as root, for rootless engines)"
  check_gid
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

  SSH_PORT=${SSH_PORT:-22}
  check_port SSH_PORT
  cfg_host_key_dir=${SSH_HOST_KEY_DIR:-/etc/ssh/host-keys}
  [[ ${cfg_host_key_dir} == /* ]] || die "SSH_HOST_KEY_DIR='${cfg_host_key_dir}' must be an absolute path"
  load_server_options # 52: DOCKER_STACKS_JUPYTER_CMD, NOTEBOOK_ARGS (extra server args), ...
  check_server_args

  if [[ ${cfg_mode} == hub ]]; then
    load_hub_config # 12: the hub's port, prefix and login
  else
    JUPYTER_PORT=${JUPYTER_PORT:-8888}
    check_port JUPYTER_PORT
    cfg_jupyter_port=${JUPYTER_PORT}
    cfg_base_url=${JUPYTER_BASE_URL:-/}
    [[ ${cfg_base_url} =~ ^/[A-Za-z0-9._~/-]*$ ]] ||
      die "JUPYTER_BASE_URL='${cfg_base_url}' must be a path like /jupyter/ (letters, digits, . _ ~ - /)"
    [[ ${cfg_base_url} == */ ]] || cfg_base_url+=/
    load_jupyter_auth
  fi
  # TensorBoard's notebook magic (%tensorboard) shows an iframe of this URL, %PORT% its port: through
  # jupyter-server-proxy under the server's own prefix, so that it works on a remote server, behind
  # JUPYTER_BASE_URL and in the hub mode (/user/NAME/proxy/6006/). Kernels get it from the server.
  [[ -n ${TENSORBOARD_PROXY_URL:-} ]] || export TENSORBOARD_PROXY_URL="${cfg_base_url}proxy/%PORT%/"
  load_ssh_keys

  local ssh_starts=0
  if ((cfg_ssh && is_root)) && [[ -n ${cfg_ssh_keys} ]]; then ssh_starts=1; fi
  if ((!cfg_jupyter && !ssh_starts)); then
    die "ENABLE_JUPYTER=0 and no SSH to start (that needs ENABLE_SSH=1, root and a key): nothing to run"
  fi
  check_listening "${ssh_starts}"
  if ((ssh_starts)); then check_host_key_dir; fi
}

# NB_GID becomes the dev user's group, and so everything in the notebooks and SSH sessions runs
# with its rights. gid 0 and the image's system groups (below 1000: shadow reads /etc/shadow, adm
# the logs, disk the block devices, staff writes /usr/local, ...) would hand those rights out, so
# they are refused; 100 (users, the image's default, which owns the venv), any gid from 1000 up, and
# any gid below 1000 that the image has no group for (a host's own scheme) are allowed.
check_gid() {
  local gid=$((10#${NB_GID})) group
  ! root_triplet || return 0 # 16-usercfg: root's own group, in the one case where the user is root
  ((gid != 0)) ||
    die "NB_GID=0 is root's group, whose rights everything run in the notebooks and SSH sessions would get; use your own gid (id -g, 1000 or above) or 100 (users)"
  if ((gid < 1000 && gid != 100)) && group=$(getent group "${gid}"); then
    die "NB_GID=${NB_GID} is the image's system group '${group%%:*}', whose rights everything run in the notebooks and SSH sessions would get; use your own gid (id -g, 1000 or above) or 100 (users)"
  fi
}

# What would otherwise fail only once the services start, with their own words and exit 1: two
# services on one port, or JupyterLab (never root) on a port that only root may listen on.
# check_listening SSH_STARTS: 1 when sshd will be started.
check_listening() {
  local port_name=JUPYTER_PORT server=JupyterLab
  [[ ${cfg_mode} != hub ]] || port_name="JUPYTERHUB_SERVICE_URL's port" server="JupyterHub's single-user server"
  if ((cfg_jupyter && $1 && 10#${cfg_jupyter_port} == 10#${SSH_PORT})); then
    die "${port_name}=${cfg_jupyter_port} and SSH_PORT=${SSH_PORT}: ${server} and sshd cannot listen on the same port; change one of them"
  fi
  local floor
  # Docker lets everyone listen on any port (0); --network host and other runtimes keep 1024.
  if ((cfg_jupyter)) && read -r floor 2>/dev/null </proc/sys/net/ipv4/ip_unprivileged_port_start &&
    ((10#${cfg_jupyter_port} < floor)); then
    die "${port_name}=${cfg_jupyter_port}: ${server} runs as ${NB_USER}, never root, and here only root may listen below port ${floor} (net.ipv4.ip_unprivileged_port_start); use ${floor} or above and publish it as any port (-p 80:8888)"
  fi
}

# Extra args for the server (start-notebook.sh ARGS, jupyterhub-singleuser ARGS) go on its command
# line, which every process in the container reads in ps: no place for a token or a password, and
# an empty one would switch the auth off. Those are settings of their own (JUPYTER_TOKEN_FILE, ...).
check_server_args() {
  local arg
  for arg in "${cfg_server_args[@]}"; do
    if [[ ${arg} =~ ^--?[A-Za-z]*\.?(token|password|hashed_password)(=|$) ]]; then
      die "the server's argument '${arg%%=*}': Jupyter's token and password are set with JUPYTER_TOKEN_FILE, JUPYTER_TOKEN or JUPYTER_PASSWORD_HASH (README, Settings), never on the command line, where every process can read them"
    fi
  done
}

# SSH_HOST_KEY_DIR is where 40-ssh makes the host keys at first start. Whether a folder can be made
# there (not under /proc, not a file, not on a read-only mount) is known only by trying, so it is
# made now, as it would be then, instead of failing then with a bare mkdir or ssh-keygen message.
check_host_key_dir() {
  local dir=${cfg_host_key_dir} error key
  error=$(mkdir -p -- "${dir}" 2>&1) || die "SSH_HOST_KEY_DIR=${dir}: no folder for host keys can be made there (${error//$'\n'/ })"
  [[ ! -w ${dir} ]] || return 0
  for key in "${dir}"/ssh_host_*_key; do
    [[ -s ${key} ]] && return 0 # keys kept on a read-only mount: nothing to write
  done
  die "SSH_HOST_KEY_DIR=${dir}: holds no host keys and none can be written there (read-only?)"
}

# Jupyter always has auth: a token (given, from a file, or generated) and/or a hashed password,
# unless JUPYTER_INSECURE_NO_AUTH=1 says otherwise in so many words.
load_jupyter_auth() {
  cfg_token=""
  cfg_token_generated=0
  cfg_password_hash=${JUPYTER_PASSWORD_HASH:-}
  if [[ -n ${JUPYTER_TOKEN_FILE:-} ]]; then
    [[ -z ${JUPYTER_TOKEN:-} ]] || die "JUPYTER_TOKEN and JUPYTER_TOKEN_FILE are both set: set one"
    check_file_size JUPYTER_TOKEN_FILE
    read_secret_file cfg_token JUPYTER_TOKEN_FILE
    ((${#cfg_token} <= 1024)) ||
      die "JUPYTER_TOKEN_FILE=${JUPYTER_TOKEN_FILE}: the token is ${#cfg_token} characters long; at most 1024"
  else
    cfg_token=${JUPYTER_TOKEN:-}
  fi
  [[ ${cfg_token} =~ ^[[:graph:]]*$ ]] || die "JUPYTER_TOKEN${JUPYTER_TOKEN_FILE:+_FILE}: the token contains spaces or control characters"
  # The token is the whole login, and Jupyter accepts any length: a chosen one must not be short
  # enough to guess (JUPYTER_TOKEN=a). The generated one has 48 hex digits.
  if [[ -n ${cfg_token} ]] && ((${#cfg_token} < 16)); then
    die "JUPYTER_TOKEN${JUPYTER_TOKEN_FILE:+_FILE}: the token is ${#cfg_token} characters long; at least 16 (make one with: openssl rand -hex 24)"
  fi
  if [[ -n ${cfg_password_hash} && ! ${cfg_password_hash} =~ ^(argon2:\$argon2(id|i|d)\$|sha1:|sha256:)[[:graph:]]+$ ]]; then
    die "JUPYTER_PASSWORD_HASH is not a Jupyter password hash (argon2:... or sha1:...; make one with: python -c 'from jupyter_server.auth import passwd; print(passwd())')"
  fi
  load_allowed_hosts
  if ((cfg_no_auth)); then
    [[ -z ${cfg_token}${cfg_password_hash} ]] ||
      die "JUPYTER_INSECURE_NO_AUTH=1 together with a token or password: drop one of them"
    # Without auth, the Host check is all that keeps a web page in a user's browser out: through
    # DNS rebinding its own name comes to point at the published port, and the page can then
    # fetch an _xsrf cookie and start kernels and terminals. So no-auth only with a list of names.
    ((${#cfg_allowed_hosts[@]} > 0)) ||
      die "JUPYTER_INSECURE_NO_AUTH=1 needs JUPYTER_ALLOWED_HOSTS, the host names JupyterLab is reached by (e.g. the proxy's jupyter.example.com, or localhost): without auth, any other name could be a web page's, through DNS rebinding"
  elif [[ -z ${cfg_token} && -z ${cfg_password_hash} ]]; then
    cfg_token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
    cfg_token_generated=1
  fi
}

# JUPYTER_ALLOWED_HOSTS: the host names (comma- or space-separated) that requests may name in
# their Host header; fed to Jupyter Server's own check (ServerApp.allow_remote_access=False and
# local_hostnames, in 50-jupyter), which also lets localhost and loopback addresses in, and no other
# address. Browsers send the name in lower case, which Jupyter compares exactly: stored so.
load_allowed_hosts() {
  cfg_allowed_hosts=()
  local -a names=()
  local name
  IFS=$', \t\n' read -r -d '' -a names <<<"${JUPYTER_ALLOWED_HOSTS:-}" || true # -d '': every line
  for name in "${names[@]}"; do
    [[ -n ${name} ]] || continue
    name=${name,,}
    if [[ ${name} =~ ^[0-9.]+$ || ${name} =~ ^\[?[0-9a-f:.]*:[0-9a-f:.]*\]?$ ]]; then
      die "JUPYTER_ALLOWED_HOSTS: '${name}' is an address; Jupyter lets loopback addresses (127.0.0.1, ::1) in always and no other address: list host names"
    fi
    [[ ${#name} -le 253 && ${name} =~ ^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$ ]] ||
      die "JUPYTER_ALLOWED_HOSTS: '${name}' is not a host name (letters, digits, dots and dashes, e.g. jupyter.example.com; no scheme, port or wildcard)"
    cfg_allowed_hosts+=("${name}")
  done
}

# SSH is key-only: the keys come from SSH_AUTHORIZED_KEYS or SSH_AUTHORIZED_KEYS_FILE, and each
# line must be a public key that ssh-keygen can read.
load_ssh_keys() {
  cfg_ssh_keys=""
  if [[ -n ${SSH_AUTHORIZED_KEYS_FILE:-} ]]; then
    [[ -z ${SSH_AUTHORIZED_KEYS:-} ]] || die "SSH_AUTHORIZED_KEYS and SSH_AUTHORIZED_KEYS_FILE are both set: set one"
    check_file_size SSH_AUTHORIZED_KEYS_FILE
    read_secret_file cfg_ssh_keys SSH_AUTHORIZED_KEYS_FILE
  else
    cfg_ssh_keys=${SSH_AUTHORIZED_KEYS:-}
  fi
  # Each line is checked where sshd's file is written (40-ssh: check_authorized_keys, one
  # ssh-keygen pass), before any service starts; one run per line here took 38 s for 10,000 keys.
}

# check_lengths: every variable of SETTING_LIMITS that is set is within its length. The message
# says how long the value is, never the value itself.
check_lengths() {
  local limit name value
  for limit in "${SETTING_LIMITS[@]}"; do
    name=${limit%%:*}
    value=${!name-}
    ((${#value} <= ${limit#*:})) ||
      die "${name} is ${#value} characters long; at most ${limit#*:}: check what was passed"
  done
}

# check_file_size NAME: the file that the variable NAME names, if it is a file at all (else
# read_secret_file says what is wrong), is at most FILE_LIMITS[NAME] bytes.
check_file_size() {
  local path=${!1} size
  [[ -f ${path} ]] || return 0
  size=$(stat -L -c %s -- "${path}")
  ((size <= FILE_LIMITS[$1])) || die "$1=${path}: the file is ${size} bytes; at most ${FILE_LIMITS[$1]}"
}
