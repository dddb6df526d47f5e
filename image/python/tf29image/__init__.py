"""Everything the image runs in Python, under one import root: the start-up planner (startup), the
self-check (selfcheck), the healthcheck, jobs, probes, docker-stacks' commands (dockerstacks) and the
user-site hook. Importable by the distro's python3 -I and the venv's Python alike through the
tf29-env.pth file that the Dockerfile puts in both site folders; standard library only outside jobs
and selfcheck's TensorFlow layers."""
