# What `cmake --install` puts in place, and the .deb `cpack -G DEB` makes of it:
#   lib/<arch>/libdistcomm.so.0.1.0 (+ .so.0, .so links) and libdistcomm.a
#   include/distcomm.h
#   bin/distcomm-launch, distcomm-config, distcomm-perf; share/man/man1/*.1.gz
#   lib/<arch>/pkgconfig/distcomm.pc
#   lib/<arch>/cmake/distcomm/ (find_package(distcomm) -> distcomm::distcomm)
#   lib/python3/dist-packages/distcomm/ (DC_PYTHON_INSTALL_DIR)
include(CMakePackageConfigHelpers)

install(TARGETS distcomm distcomm_static EXPORT distcommTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES include/distcomm.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# pkg-config: written at install time, so that its prefix is the one
# installed to (cmake --install --prefix, cpack's /usr), not the configured one.
# In a wheel (cmake/wheel.cmake) the prefix is ${pcfiledir}-relative.
if(DC_PC_RELOCATABLE)
  set(DC_PC_PREFIX_CODE "set(DC_PC_PREFIX [=[\${pcfiledir}/../../..]=])")
else()
  set(DC_PC_PREFIX_CODE "set(DC_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")")
endif()
install(CODE "
  ${DC_PC_PREFIX_CODE}
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/distcomm.pc.in\" \"${CMAKE_BINARY_DIR}/pc/distcomm.pc\" @ONLY)
  file(INSTALL \"${CMAKE_BINARY_DIR}/pc/distcomm.pc\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")")

# CMake package: relocatable (paths computed from the file's own place).
set(DC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/distcomm)
install(EXPORT distcommTargets NAMESPACE distcomm:: DESTINATION ${DC_CMAKE_DIR})
configure_package_config_file(cmake/distcommConfig.cmake.in
  ${CMAKE_BINARY_DIR}/distcommConfig.cmake INSTALL_DESTINATION ${DC_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/distcommConfigVersion.cmake
  COMPATIBILITY SameMinorVersion) # 0.x: a minor release may break the API
install(FILES ${CMAKE_BINARY_DIR}/distcommConfig.cmake
              ${CMAKE_BINARY_DIR}/distcommConfigVersion.cmake DESTINATION ${DC_CMAKE_DIR})

# Man pages, made from each tool's --help at build time.
set(DC_MAN_SUMMARY_distcomm-launch "start the ranks of a distributed program (mlx.launch)")
set(DC_MAN_SUMMARY_distcomm-config "find how hosts are linked and write the hostfile (mlx.distributed_config)")
set(DC_MAN_SUMMARY_distcomm-perf "benchmark distcomm's collectives (nccl-tests style)")
set(DC_MAN_PAGES)
foreach(tool distcomm-launch distcomm-config distcomm-perf)
  set(page ${CMAKE_BINARY_DIR}/man/${tool}.1)
  add_custom_command(OUTPUT ${page} ${page}.gz
    COMMAND ${CMAKE_COMMAND} -DTOOL=$<TARGET_FILE:${tool}> -DNAME=${tool}
            "-DSUMMARY=${DC_MAN_SUMMARY_${tool}}" -DVERSION=${PROJECT_VERSION} -DOUT=${page}
            -P ${PROJECT_SOURCE_DIR}/cmake/manpage.cmake
    DEPENDS ${tool} ${PROJECT_SOURCE_DIR}/cmake/manpage.cmake VERBATIM)
  list(APPEND DC_MAN_PAGES ${page}.gz)
endforeach()
add_custom_target(manpages ALL DEPENDS ${DC_MAN_PAGES})
install(FILES ${DC_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# The Python package, where Debian's /usr/bin/python3 looks (dist-packages);
# relative paths are under the install prefix.
if(TARGET distcomm_python AND SKBUILD)
  set(DC_PYTHON_INSTALL_DIR .) # cmake/wheel.cmake: the prefix is site-packages
elseif(TARGET distcomm_python)
  # /usr: Debian's own place for packages; elsewhere (/usr/local) the
  # versioned folder, which Debian's python3 also searches.
  execute_process(COMMAND ${DC_PYTHON} -c "import sys; print('%d.%d' % sys.version_info[:2])"
                  OUTPUT_VARIABLE DC_PYTHON_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(dir lib/python${DC_PYTHON_VERSION}/dist-packages)
  if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(dir lib/python3/dist-packages)
  endif()
  set(DC_PYTHON_INSTALL_DIR ${dir} CACHE STRING
      "where `cmake --install` puts the Python package distcomm (relative: under the prefix)")
endif()
if(TARGET distcomm_python)
  # The module finds libdistcomm.so from where both are installed.
  file(RELATIVE_PATH dc_py_to_lib ${CMAKE_INSTALL_PREFIX}/${DC_PYTHON_INSTALL_DIR}/distcomm
       ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR})
  set_target_properties(distcomm_python PROPERTIES INSTALL_RPATH "$ORIGIN/${dc_py_to_lib}")
  install(TARGETS distcomm_python LIBRARY DESTINATION ${DC_PYTHON_INSTALL_DIR}/distcomm)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/distcomm/ DESTINATION ${DC_PYTHON_INSTALL_DIR}/distcomm
          FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
endif()

include(cmake/package.cmake)
