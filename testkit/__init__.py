"""The harness that the tests and the benchmarks share, apart from both: containers that clean up
after themselves, waiting with a deadline, free loopback ports, and real Jupyter and SSH clients."""
