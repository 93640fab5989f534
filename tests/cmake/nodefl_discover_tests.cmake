# nodefl_discover_tests(target KIND <unit|integration> AREA <sdk|host>
#                       [SLOW gtest-filter] [HOST_ONLY gtest-filter]
#                       [TIMEOUT seconds] [PRE_TEST] [ONLY_EXHAUSTIVE])
#
# Registers a GoogleTest binary's tests with CTest, each with exactly one of
# the labels unit / integration / slow (tests/README.md says what they mean
# and how to run each) plus its area (sdk or host). Tests matching SLOW (a
# --gtest_filter pattern, e.g. "*cora*:*Extension16") are labelled slow
# instead of KIND. PRE_TEST lists the tests when CTest runs rather than
# after each link (a cross build lists nothing: see below).
#
# A cross build registers a representative subset: neither the SLOW cases
# nor those matching HOST_ONLY (exhaustive sweeps and statistical checks of
# arithmetic that is the same on every target, minutes under qemu) nor
# those matching the cache variable NODEFL_CROSS_LEFT_OUT (a gtest filter
# for one target, e.g. armhf in tests/run-all.sh); the host build runs them
# all, once. There the HOST_ONLY cases also carry the label exhaustive,
# which the sanitizer stage leaves out too (the same code paths as the unit
# tests beside them, many times over).
#
# Under emulation a binary's cases run in one process, as one CTest test
# named after the binary: starting qemu and loading the target's libraries
# costs about 0.09 s of CPU per process, which with a process per case was
# most of a cross stage's test time (a cross stage has some 450 cases, most
# of them milliseconds long). A failing case is named in the test's output.
#
# ONLY_EXHAUSTIVE (host builds) registers the SLOW and HOST_ONLY cases only
# (NODEFL_HOST_SDK_TESTS in tests/CMakeLists.txt).
#
# Slow tests get a high COST, so that a parallel ctest starts them first
# (on a fresh tree it has no timings of its own) instead of ending on one.
#
# Labels are set by a small CTest include file rather than through
# gtest_discover_tests(PROPERTIES): CMake 3.25 writes a list-valued property
# there as separate arguments, so "unit;host" would not survive.
# NO_PRETTY_VALUES: CTest names a test exactly as GoogleTest does (by the
# suite's name generator) instead of appending the printed parameter.
function(nodefl_discover_tests target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "PRE_TEST;ONLY_EXHAUSTIVE" "KIND;AREA;SLOW;HOST_ONLY;TIMEOUT" "")
  if(NOT arg_KIND MATCHES "^(unit|integration)$" OR NOT arg_AREA MATCHES "^(sdk|host)$")
    message(FATAL_ERROR "nodefl_discover_tests(${target}): KIND unit|integration and AREA sdk|host are required")
  endif()
  set(common NO_PRETTY_VALUES)
  if(arg_PRE_TEST)
    list(APPEND common DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 120)
  endif()
  if(arg_TIMEOUT)
    list(APPEND common PROPERTIES TIMEOUT ${arg_TIMEOUT})
  endif()
  if(CMAKE_CROSSCOMPILING)
    set(skipped "")
    foreach(filter IN ITEMS "${arg_SLOW}" "${arg_HOST_ONLY}" "${NODEFL_CROSS_LEFT_OUT}")
      if(filter AND skipped)
        string(APPEND skipped ":")
      endif()
      string(APPEND skipped "${filter}")
    endforeach()
    set(args "")
    if(skipped)
      set(args "--gtest_filter=-${skipped}")
    endif()
    add_test(NAME ${target} COMMAND ${target} ${args})
    set_tests_properties(${target} PROPERTIES LABELS "${arg_KIND};${arg_AREA}")
    if(arg_TIMEOUT)
      set_tests_properties(${target} PROPERTIES TIMEOUT ${arg_TIMEOUT})
    endif()
    return()
  endif()
  set(labels ${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake)
  if(arg_SLOW OR arg_HOST_ONLY)
    # Three disjoint lists: slow, exhaustive (HOST_ONLY and not slow), the rest.
    set(not_main "${arg_SLOW}")
    if(arg_HOST_ONLY)
      if(not_main)
        string(APPEND not_main ":")
      endif()
      string(APPEND not_main "${arg_HOST_ONLY}")
    endif()
    if(NOT arg_ONLY_EXHAUSTIVE)
      gtest_discover_tests(${target} TEST_LIST ${target}_main TEST_FILTER "-${not_main}" ${common})
    endif()
    if(arg_SLOW)
      gtest_discover_tests(${target} TEST_LIST ${target}_slow TEST_FILTER "${arg_SLOW}" ${common})
    endif()
    if(arg_HOST_ONLY)
      set(host_only_filter "${arg_HOST_ONLY}")
      if(arg_SLOW)
        string(APPEND host_only_filter "-${arg_SLOW}")
      endif()
      gtest_discover_tests(${target} TEST_LIST ${target}_exhaustive TEST_FILTER "${host_only_filter}" ${common})
    endif()
  elseif(arg_ONLY_EXHAUSTIVE)
    message(FATAL_ERROR "nodefl_discover_tests(${target}): ONLY_EXHAUSTIVE without SLOW or HOST_ONLY cases")
  else()
    gtest_discover_tests(${target} TEST_LIST ${target}_main ${common})
  endif()
  # A list stays unset while the binary is not built (CTest then reports
  # it as NOT_BUILT) or when a filter matches nothing.
  file(WRITE ${labels}
       "if(${target}_main)\n"
       "  set_tests_properties(\${${target}_main} PROPERTIES LABELS \"${arg_KIND};${arg_AREA}\")\n"
       "endif()\n"
       "if(${target}_slow)\n"
       "  set_tests_properties(\${${target}_slow} PROPERTIES LABELS \"slow;${arg_AREA}\" COST 10000)\n"
       "endif()\n"
       "if(${target}_exhaustive)\n"
       "  set_tests_properties(\${${target}_exhaustive} PROPERTIES LABELS \"${arg_KIND};${arg_AREA};exhaustive\")\n"
       "endif()\n")
  # Included after the discovery include files appended above, so the
  # test lists are known by then.
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels})
endfunction()
