# The wheel's layout, for scikit-build-core (pip install ., pip wheel .),
# whose install prefix is the wheel's site-packages:
#   distcomm/                 the Python package and its extension
#   distcomm/lib/             libdistcomm.so* and .a, every other library
#                             installed to LIBDIR, pkgconfig/, cmake/distcomm/
#   distcomm/include/         distcomm.h
#   <env>/bin/                distcomm-launch, distcomm-config, distcomm-perf
#   <env>/share/man/man1/     their man pages
# Plain variables, not cache entries: the SKBUILD_* folders are new on every
# pip run, and a reused build folder must follow them.
set(CMAKE_INSTALL_LIBDIR distcomm/lib)
set(CMAKE_INSTALL_INCLUDEDIR distcomm/include)
set(CMAKE_INSTALL_BINDIR ${SKBUILD_SCRIPTS_DIR})
set(CMAKE_INSTALL_MANDIR ${SKBUILD_DATA_DIR}/share/man)
# A library that links libdistcomm.so (a face beside it) finds it in its own
# folder; the extension (cmake/install.cmake) in distcomm/lib. The tools
# link the static library: they need nothing from distcomm/lib.
set(CMAKE_INSTALL_RPATH "$ORIGIN")
# pkg-config: the prefix is site-packages, three folders above the .pc file.
set(DC_PC_RELOCATABLE ON)
