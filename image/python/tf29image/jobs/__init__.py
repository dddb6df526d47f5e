"""`job`: notebooks and scripts run headless in the environment, each in a folder of its own under
~/work/jobs that holds its input, its output and job.json (docs/jobs.md). Stdlib only but for the
notebook worker (papermill), and Python 3.8: it runs on the venv's Python in the image."""
