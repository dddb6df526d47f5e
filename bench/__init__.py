"""Benchmarks of the tf29-env image: size, build times, start-up, self-check and import times.

Run by `make bench` (`python -m bench`), never by the test suite; see bench/README.md."""
