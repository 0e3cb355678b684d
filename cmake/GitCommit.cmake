# Writes OUT (generated/kvplan/git_commit.h) with the commit of SOURCE_DIR, "+dirty" when tracked
# files differ from it, or "unknown" outside a git checkout. Run at every build by the
# kvplan_git_commit target (CMakeLists.txt); the file is rewritten only when its text changes, so
# that only core/src/build_info.cpp recompiles, and only after a commit.
execute_process(COMMAND git -C ${SOURCE_DIR} rev-parse --short HEAD
  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT commit)
  set(commit unknown)
else()
  execute_process(COMMAND git -C ${SOURCE_DIR} status --porcelain --untracked-files=no
    OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    string(APPEND commit "+dirty")
  endif()
endif()
set(text "// Generated at build time by cmake/GitCommit.cmake. Do not edit.\n#pragma once\n#define KVPLAN_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
