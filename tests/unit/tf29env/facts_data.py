"""Facts recorded from real images by image/python/tf29image/probes/facts.py (`facts` mode), for the unit tests.

GPU_STANDIN: tf29-env:dev-gpu (stand-in base tf29-env-standin:bullseye-cuda11), 2026-12-02, no GPU.
CPU_STANDIN: tf29-env-i4:2.9.3-cpu-py3.9-debian11 (base tf29-env-standin:bullseye), 2026-12-02.
OFFICIAL_GPU: what the probe reports on nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04 (Ubuntu
20.04's python3 3.8.10, libcudnn8 8.1.1), written from those packages' versions, not run here:
no registry is reachable from this machine.
"""

from tf29env.core.facts import ImageFacts

GPU_STANDIN = ImageFacts.from_dict({
    "tensorflow": "2.9.3", "tf_cuda_build": True, "tf_cuda": "11.2", "tf_cudnn": "8", "python": "3.9.2",
    "os_id": "debian", "os_version": "11", "os_name": "Debian GNU/Linux 11 (bullseye)", "cuda_runtime": "11.8",
    "cuda_runtime_source": "CUDA_VERSION", "cudnn_runtime": "8.9.6",
})
CPU_STANDIN = ImageFacts.from_dict({
    "tensorflow": "2.9.3", "tf_cuda_build": False, "tf_cuda": "", "tf_cudnn": "", "python": "3.9.2",
    "os_id": "debian", "os_version": "11", "os_name": "Debian GNU/Linux 11 (bullseye)", "cuda_runtime": "",
    "cuda_runtime_source": "", "cudnn_runtime": "",
})
OFFICIAL_GPU = ImageFacts.from_dict({
    "tensorflow": "2.9.3", "tf_cuda_build": True, "tf_cuda": "11.2", "tf_cudnn": "8", "python": "3.8.10",
    "os_id": "ubuntu", "os_version": "20.04", "os_name": "Ubuntu 20.04.6 LTS", "cuda_runtime": "11.2",
    "cuda_runtime_source": "libcudart", "cudnn_runtime": "8.1.1",
})
