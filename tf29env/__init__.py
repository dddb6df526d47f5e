"""Host side of tf29-env: build, tag, test and push the image (build.py is its command line)."""
