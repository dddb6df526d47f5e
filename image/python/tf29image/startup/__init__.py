"""Start-up helpers of the entrypoint that parse or check more than a glance's worth: run by the
distro's python3 -I (3.8 on Ubuntu 20.04, 3.9 on Debian 11), standard library only."""
