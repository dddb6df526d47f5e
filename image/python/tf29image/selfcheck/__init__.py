"""The GPU / FP16 self-check of tf29-env: six layers (driver, CUDA libraries, TensorFlow, mixed
precision, FP16 performance, environment), each a small module under checks/, each result one
line with its fix. Layers 1, 2 and 6 need only the standard library (they run on a bare GPU host
too); layers 3-5 import TensorFlow in a child process that the runner can time out and kill."""

SCHEMA_ID = "tf29-env/selfcheck/v1"
__version__ = "1.0.0"
