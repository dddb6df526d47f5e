# shellcheck shell=bash
# 52-serveropts: docker-stacks' options for the server, read and checked with the other settings
# (10-config calls load_server_options), applied once the hooks have run (apply_server_options):
#   DOCKER_STACKS_JUPYTER_CMD  lab (default), server or notebook: the app the services mode starts.
#                              notebook needs the notebook package, which the image lacks unless
#                              installed. In the hub mode jupyterhub-singleuser runs instead.
#   NOTEBOOK_ARGS              extra args for the server (services and hub mode), split as
#                              docker-stacks does (dockerstacks/notebook_args.py), before the
#                              command's own ARGS; the same rule holds for both: no auth in args.
#   JUPYTER_ENV_VARS_TO_UNSET  names (comma- or space-separated) taken out of the environment once
#                              the hooks have run (hooks may still use them), so that the server,
#                              its kernels, SSH sessions and a command never see them.
#   GEN_CERT                   a switch: JupyterLab speaks HTTPS with a self-signed certificate made
#                              at every start (55-cert); the token or password stays required.

# Needed by the entrypoint or the services themselves: unsetting them breaks the start, not a leak.
readonly KEEP_SET=(PATH HOME TFENV_RUN_DIR JUPYTER_RUNTIME_DIR)

load_server_options() {
  cfg_jupyter_app=${DOCKER_STACKS_JUPYTER_CMD:-lab}
  case ${cfg_jupyter_app} in
    lab | server) ;;
    notebook)
      [[ ${cfg_mode} != services ]] || command -v jupyter-notebook >/dev/null ||
        die "DOCKER_STACKS_JUPYTER_CMD=notebook: the notebook package (Jupyter Notebook 7) is not in this image; use lab or server, or add it (pip install notebook) in an image built FROM this one"
      ;;
    *) die "DOCKER_STACKS_JUPYTER_CMD='${cfg_jupyter_app}' is not one of lab, server, notebook" ;;
  esac

  local -a notebook_args=()
  if [[ -n ${NOTEBOOK_ARGS:-} ]]; then
    local words error status=0
    # The words through a file, not $( ), which drops the NULs that end each; its error through $( ).
    words=$(mktemp)
    error=$(/usr/bin/python3 -I /opt/tf29-env/dockerstacks/notebook_args.py 2>&1 >"${words}") || status=$?
    mapfile -d '' -t notebook_args <"${words}"
    rm -f "${words}"
    case ${status} in
      0) ;;
      2) die "${error}" ;;
      *) die "NOTEBOOK_ARGS: its splitter failed (exit ${status}): ${error//$'\n'/ }" ;;
    esac
  fi
  # docker-stacks' start-notebook.py and start-singleuser.py put NOTEBOOK_ARGS first, then their own.
  [[ ${cfg_mode} == command ]] || cfg_server_args=("${notebook_args[@]}" "${cfg_server_args[@]}")

  cfg_unset_names=()
  local -a names=()
  local name
  IFS=$', \t\n' read -r -d '' -a names <<<"${JUPYTER_ENV_VARS_TO_UNSET:-}" || true # -d '': every line
  for name in "${names[@]}"; do
    [[ -n ${name} ]] || continue
    [[ ${name} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] ||
      die "JUPYTER_ENV_VARS_TO_UNSET: '${name}' is not a variable name (letters, digits, _; comma-separated)"
    [[ " ${KEEP_SET[*]} " != *" ${name} "* ]] ||
      die "JUPYTER_ENV_VARS_TO_UNSET: ${name} is needed by the services themselves and cannot be unset"
    cfg_unset_names+=("${name}")
  done

  cfg_gen_cert=0
  parse_switch cfg_gen_cert GEN_CERT 0
  if ((cfg_gen_cert)) && [[ ${cfg_mode} == hub ]]; then
    die "GEN_CERT=${GEN_CERT}: in the hub mode the hub decides whether its servers speak HTTPS (JupyterHub's internal_ssl); unset GEN_CERT"
  fi
  if ((cfg_gen_cert)) && [[ ${cfg_mode} == services ]] && ((!cfg_jupyter)); then
    die "GEN_CERT=${GEN_CERT} with ENABLE_JUPYTER=0: there is no Jupyter server to give a certificate; drop one of them"
  fi
}

# After the hooks, before anything starts (the command included): the named variables go, then
# JUPYTER_ENV_VARS_TO_UNSET itself, as in docker-stacks; the certificate is made (55-cert).
apply_server_options() {
  local name gone=()
  for name in "${cfg_unset_names[@]}"; do
    # Only what is in the environment: the entrypoint's own (unexported) variables are not the user's.
    if [[ -n $(compgen -e -X "!${name}") ]]; then
      unset -v "${name}"
      gone+=("${name}")
    fi
  done
  unset -v JUPYTER_ENV_VARS_TO_UNSET
  ((${#gone[@]} == 0)) || log "JUPYTER_ENV_VARS_TO_UNSET: ${gone[*]} taken out of the environment of everything started from here on"
  if ((cfg_gen_cert)) && [[ ${cfg_mode} == services ]]; then make_certificate; fi
}
