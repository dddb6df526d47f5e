"""What the image reports about itself for the SBOM and the self-check: facts and the package inventory."""
