# tests/layering_check.cmake — fails when a source file or a CMake link line adds an edge the
# dependency graph core <- sim <- plan <- {cli, gui} forbids (DESIGN §2), in particular any
# gui -> cli or cli -> gui edge. Run as a test:
#   cmake -DROOT=<source tree> -P tests/layering_check.cmake
# It checks, under ROOT:
#  - the #include "..." lines of cli/, gui/ and plan/ (and of core/ and sim/): a file may not
#    include a header of a folder it must not depend on, whether by its kvplan/<folder>/ path or by
#    the bare name of a header that lives only in that folder (cli/ and gui/ headers are included
#    by bare name inside their own folder);
#  - that plan/, cli/, core/, sim/ and python/ include no Qt header (only gui/ knows Qt);
#  - the target_link_libraries / target_include_directories commands of each folder's
#    CMakeLists.txt: no target or path of a forbidden folder.
# tests/layering/bad_* are trees with one such edge each; the tests expect this script to fail on
# them, so the check itself is checked.
cmake_minimum_required(VERSION 3.20)  # IN_LIST and the policies of the project
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P layering_check.cmake")
endif()

set(forbidden_core sim plan cli gui)
set(forbidden_sim plan cli gui)
set(forbidden_plan cli gui)
set(forbidden_cli gui)
set(forbidden_gui cli)
set(forbidden_python cli gui)  # the Python module stands on plan/, as the front ends do
# Targets each folder defines, for the link-line check.
set(targets_plan kvplan_plan kvplan::plan)
set(targets_cli kvplan_cli_lib kvplan kvplan::cli)
set(targets_gui kvplan_report_pdf kvplan::report_pdf kvplan_planner kvplan::planner kvplan-gui kvplan-report-pdf)
set(targets_sim kvplan_sim kvplan::sim)

set(errors "")

# Header file names (no folder) found under ROOT/<folder>.
function(headers_of folder out)
  file(GLOB_RECURSE files RELATIVE ${ROOT}/${folder} ${ROOT}/${folder}/*.h ${ROOT}/${folder}/*.hpp)
  set(names "")
  foreach(f IN LISTS files)
    get_filename_component(n ${f} NAME)
    list(APPEND names ${n})
  endforeach()
  set(${out} ${names} PARENT_SCOPE)
endfunction()

foreach(folder core sim plan cli gui python)
  if(NOT IS_DIRECTORY ${ROOT}/${folder})
    continue()
  endif()
  headers_of(${folder} own_headers)
  file(GLOB_RECURSE sources ${ROOT}/${folder}/*.h ${ROOT}/${folder}/*.hpp ${ROOT}/${folder}/*.cpp ${ROOT}/${folder}/*.cu)
  foreach(src IN LISTS sources)
    file(STRINGS ${src} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    file(RELATIVE_PATH rel ${ROOT} ${src})
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">].*" "\\1" inc "${line}")
      get_filename_component(inc_name "${inc}" NAME)
      if(NOT folder STREQUAL "gui" AND (inc MATCHES "^Q[A-Za-z]+$" OR inc MATCHES "^Qt[A-Za-z]*/"))
        list(APPEND errors "${rel}: #include <${inc}>: only gui/ may use Qt")
      endif()
      foreach(to IN LISTS forbidden_${folder})
        if(inc MATCHES "^kvplan/${to}/" OR inc MATCHES "(^|/)\\.\\./(\\.\\./)*${to}/")
          list(APPEND errors "${rel}: #include \"${inc}\": ${folder}/ must not depend on ${to}/")
        elseif(line MATCHES "\"" AND IS_DIRECTORY ${ROOT}/${to})
          headers_of(${to} their_headers)
          if(inc_name IN_LIST their_headers AND NOT inc_name IN_LIST own_headers AND NOT inc MATCHES "^kvplan/")
            list(APPEND errors "${rel}: #include \"${inc}\" is a header of ${to}/: ${folder}/ must not depend on ${to}/")
          endif()
        endif()
      endforeach()
    endforeach()
  endforeach()

  # Link and include lines of the folder's CMake files, comments removed.
  file(GLOB_RECURSE cmake_files ${ROOT}/${folder}/CMakeLists.txt ${ROOT}/${folder}/*.cmake)
  foreach(cm IN LISTS cmake_files)
    file(READ ${cm} text)
    string(REGEX REPLACE "#[^\n]*" "" text "${text}")
    string(REGEX MATCHALL "target_(link_libraries|include_directories)[ \t]*\\([^)]*\\)" commands "${text}")
    file(RELATIVE_PATH rel ${ROOT} ${cm})
    foreach(cmd IN LISTS commands)
      string(REGEX REPLACE "[ \t\n]+" " " cmd "${cmd}")
      foreach(to IN LISTS forbidden_${folder})
        foreach(t IN LISTS targets_${to})
          string(REGEX REPLACE "([.+*?^$])" "\\\\\\1" t_re "${t}")
          if(cmd MATCHES "[ (]${t_re}[ )]")
            list(APPEND errors "${rel}: '${cmd}' links ${t} from ${to}/")
          endif()
        endforeach()
        if(cmd MATCHES "/${to}([/ )]|$)")
          list(APPEND errors "${rel}: '${cmd}' uses a path of ${to}/")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()

if(errors)
  list(JOIN errors "\n  " text)
  message(FATAL_ERROR "layering: forbidden dependencies (core <- sim <- plan <- {cli, gui}; DESIGN §2):\n  ${text}")
endif()
message(STATUS "layering: no forbidden include or link edge under ${ROOT}")
