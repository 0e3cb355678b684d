# `cmake --install build --prefix P` installs kvplan as a C++ package (docs/library.md):
#   P/include/kvplan/{core,sim,plan,calibration,kernels}/*.h and kvplan/config.h
#   P/lib/libkvplan_{core,sim,plan,calibration,kernels}.a
#   P/lib/cmake/kvplan/kvplanConfig.cmake (+ version file and the exported targets)
# so that a consumer writes
#   find_package(kvplan 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE kvplan::plan)
# examples/installed/ is such a consumer; tests/package builds it against an install in the build
# folder. The libraries are static, so what they link privately (calibration, SQLite, fmt) is in
# their link interface too: kvplanConfig.cmake finds those packages (find_dependency) before it
# loads the targets. Header-only private dependencies (Boost.Graph, Eigen) are build-only.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_kvplan_installed_targets kvplan_core kvplan_sim kvplan_plan kvplan_calibration kvplan_kernels)
foreach(t IN LISTS _kvplan_installed_targets)
  string(REPLACE "kvplan_" "" _name ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${_name})
endforeach()
# The warning flags reach no consumer (a static library's private link items are link-only), but
# the exported libraries name the target, so it is exported too.
set_target_properties(kvplan_warnings PROPERTIES EXPORT_NAME warnings)

install(TARGETS ${_kvplan_installed_targets} kvplan_warnings
        EXPORT kvplanTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(folder core sim plan calibration kernels)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/${folder}/include/kvplan/${folder}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kvplan)
endforeach()
install(FILES ${CMAKE_BINARY_DIR}/generated/kvplan/config.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kvplan)

set(_kvplan_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/kvplan)
install(EXPORT kvplanTargets NAMESPACE kvplan:: DESTINATION ${_kvplan_cmake_dir})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/kvplanConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/package/kvplanConfig.cmake
                              INSTALL_DESTINATION ${_kvplan_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/kvplanConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/kvplanConfig.cmake ${CMAKE_BINARY_DIR}/package/kvplanConfigVersion.cmake
        DESTINATION ${_kvplan_cmake_dir})
