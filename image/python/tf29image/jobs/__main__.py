import sys

from tf29image.jobs.cli import main

sys.exit(main(sys.argv[1:]))
