# Horovod's GPU build (make install HOROVOD_GPU_OPERATIONS=NCCL): the release
# flags of horovod_release.cmake, and a run path relative to the library, so
# that horovod/tensorflow/mpi_lib*.so finds libnccl.so.2 in the venv's own
# nvidia-nccl-cu12 wheel (site-packages/nvidia/nccl/lib) wherever the venv is,
# in the image too; the build's link directory is not kept.
include(${CMAKE_CURRENT_LIST_DIR}/horovod_release.cmake)
set(CMAKE_SKIP_BUILD_RPATH ON CACHE BOOL "")
set(CMAKE_SHARED_LINKER_FLAGS "-Wl,-rpath,\\$ORIGIN/../../nvidia/nccl/lib" CACHE STRING "")
