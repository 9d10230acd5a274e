# `cpack -G DEB` (in the build folder): one .deb, "distcomm", of everything
# cmake/install.cmake installs, for prefix /usr.
set(CPACK_PACKAGE_NAME distcomm)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "distcomm maintainers <distcomm@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "MLX's distributed layer in C: collectives over TCP, shared memory or MPI, and tools")
set(CPACK_PACKAGE_DESCRIPTION
    "libdistcomm (shared and static, distcomm.h, pkg-config and CMake files), \
distcomm-launch (mlx.launch), distcomm-config (mlx.distributed_config), \
distcomm-perf and the Python package distcomm.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # distcomm_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION net)
# Depends: what the binaries link (libc6, and libcjson1 for the tools), as
# dpkg-shlibdeps finds it; the fixed list where dpkg-dev is missing.
find_program(DC_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(DC_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libcjson1")
endif()
# What the library only dlopen()s is optional: libsodium23 (the job token
# of distcomm-launch), libcjson1 (hostfiles: already a Depends), MPI (the
# mpi backend). The Python package needs the python3 it was built for.
set(DC_DEB_RECOMMENDS "libsodium23, openssh-client")
if(DC_PYTHON_VERSION MATCHES "^([0-9]+)\\.([0-9]+)$")
  math(EXPR pynext "${CMAKE_MATCH_2} + 1")
  string(APPEND DC_DEB_RECOMMENDS
         ", python3 (>= ${DC_PYTHON_VERSION}), python3 (<< ${CMAKE_MATCH_1}.${pynext}), python3-numpy")
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "${DC_DEB_RECOMMENDS}")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "openmpi-bin | mpich, iproute2, iputils-ping")
include(CPack)
