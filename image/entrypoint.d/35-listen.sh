# shellcheck shell=bash
# 35-listen: the addresses Jupyter and sshd listen on: IPv4 and IPv6 when the container has IPv6,
# IPv4 alone when it has none. Docker gives a container IPv6 on an IPv6 network or with
# `--sysctl net.ipv6.conf.all.disable_ipv6=0`, Kubernetes on a dual-stack or IPv6-only cluster;
# elsewhere IPv6 is switched off in the container, which is the normal case and no warning's worth.
# In the hub mode the hub's JUPYTERHUB_SERVICE_URL names the server's address (startup/plan.py: load_hub_config).

# has_ipv6: the container's loopback has ::1, which it has exactly when IPv6 is on (switching it off
# takes every IPv6 address away, ::1 included).
has_ipv6() {
  grep -qs '^00000000000000000000000000000001 ' /proc/net/if_inet6
}

# jupyter_listen_ip: the value for ServerApp.ip. Empty is "every address": Jupyter (tornado) then
# opens one socket on 0.0.0.0 and one on :: (IPv6 only), whereas "::" alone would be IPv6 only.
jupyter_listen_ip() {
  if has_ipv6; then printf ''; else printf '0.0.0.0'; fi
}

# sshd_address_family: the value for sshd's AddressFamily: any (0.0.0.0 and ::) or inet.
sshd_address_family() {
  if has_ipv6; then printf 'any'; else printf 'inet'; fi
}
