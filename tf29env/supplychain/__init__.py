"""What the image is made of: its SBOM, the licenses, NVIDIA's libraries and known vulnerabilities."""
