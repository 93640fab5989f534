# Precompiled headers for the tests (tests/support/pch/test_pch.h: GoogleTest
# and the standard library headers the tests use).
#
# One precompiled header per language standard, built by a small object
# library (nodefl_test_pch_cxx17 / _cxx20) and reused by every test target
# of that standard (REUSE_FROM): test files are most of the build, and
# GoogleTest's headers were about a third of a typical test file's compile
# time. GCC uses a precompiled header only if it was built with the same
# options; -Winvalid-pch turns a header it refuses into a warning (an error
# under NODEFL_WERROR) instead of a silent slow build.
#
# NODEFL_TEST_PCH=OFF builds the tests without it (e.g. to check that a test
# file includes what it uses).
option(NODEFL_TEST_PCH "Precompile GoogleTest and standard headers for the tests" ON)

# nodefl_test_pch_host(STD): the target that builds the header for C++STD.
function(nodefl_test_pch_host std)
  set(host nodefl_test_pch_cxx${std})
  if(TARGET ${host})
    return()
  endif()
  add_library(${host} OBJECT ${PROJECT_SOURCE_DIR}/tests/support/pch/test_pch_anchor.cc)
  target_link_libraries(${host} PRIVATE GTest::gtest nodefl_warnings)
  set_target_properties(${host} PROPERTIES CXX_STANDARD ${std} CXX_STANDARD_REQUIRED ON)
  target_precompile_headers(${host} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support/pch/test_pch.h)
  target_compile_options(${host} PRIVATE -Winvalid-pch)
endfunction()

# nodefl_use_test_pch(DIR STD): every executable and static library defined
# in DIR and below that links GoogleTest directly uses the C++STD header;
# they must all be compiled as C++STD (the directory sets CMAKE_CXX_STANDARD)
# and GCC checks the rest (-Winvalid-pch). A target opts out with the
# property NODEFL_NO_TEST_PCH.
function(nodefl_use_test_pch dir std)
  if(NOT NODEFL_TEST_PCH)
    return()
  endif()
  nodefl_test_pch_host(${std})
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY)$")
      continue()
    endif()
    get_target_property(opt_out ${target} NODEFL_NO_TEST_PCH)
    get_target_property(libs ${target} LINK_LIBRARIES)
    if(opt_out OR NOT "GTest::gtest" IN_LIST libs)
      continue()
    endif()
    get_target_property(target_std ${target} CXX_STANDARD)
    if(NOT target_std STREQUAL std)
      message(FATAL_ERROR "${target}: the C++${std} test header needs CXX_STANDARD ${std} (has ${target_std})")
    endif()
    target_precompile_headers(${target} REUSE_FROM nodefl_test_pch_cxx${std})
    target_compile_options(${target} PRIVATE -Winvalid-pch)
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    nodefl_use_test_pch(${sub} ${std})
  endforeach()
endfunction()
