"""docker-stacks' start-up commands (start-notebook.py, start-singleuser.py and their arguments), kept
for users who know them."""
