"""tf29-env's Jupyter Server settings, for every Jupyter server started in the image: JupyterLab as
the entrypoint starts it, and one a user starts by hand. It is the venv's jupyter_server_config.py
(the Dockerfile links it there), so a user's own ~/.jupyter/jupyter_server_config.* loads after it
and wins. Python 3.8 (Ubuntu 20.04's) or newer; only what the server itself imports.

The token stays out of kernels and terminals. The entrypoint hands it to the server in
JUPYTER_TOKEN, Jupyter's own variable (argv would show it to every process through ps). Jupyter
reads it and leaves it there, and every kernel and terminal starts with a copy of the server's
environment: `env` in a terminal, or a notebook printing os.environ (then shared with its outputs),
would show the token. It is taken out here, before anything is started.
"""

import os

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

token = os.environ.pop("JUPYTER_TOKEN", None)
if token:
    c.IdentityProvider.token = token
del token
