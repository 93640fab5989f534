# CTest sdk_protocol_nanopb_runtime: what the nanopb runtime archive the SDK links
# may reference, and proof that its heap paths are dead code for the SDK.
#
#   cmake -DNM=<nm> -DARCHIVE=<libprotobuf-nanopb.a> -DHEADER=<envelope.pb.h>
#         -P check_nanopb_runtime.cmake
#
# tests/sdk/check_no_heap_symbols.cmake covers the SDK's own archives; the
# nanopb runtime is an imported archive and is not on that list. Debian builds
# libprotobuf-nanopb.a with PB_ENABLE_MALLOC, so it references realloc and
# free (allocate_field, pb_release). nanopb reaches them only for fields with
# the POINTER allocation type. This check
#   * fails on any other heap, exception or RTTI reference in the runtime;
#   * reports realloc/free if present, and then requires that every field of
#     the generated envelope.pb.h is STATIC (also enforced when it is
#     generated), which leaves those paths unreachable.
# The runtime half of the proof is NODEFL_EXPECT_NO_HEAP in protocol_*_test.cc.
if(NOT NM OR NOT ARCHIVE OR NOT HEADER)
  message(FATAL_ERROR "usage: cmake -DNM=nm -DARCHIVE=lib.a -DHEADER=x.pb.h -P check_nanopb_runtime.cmake")
endif()
set(forbidden
  "^malloc$" "^calloc$" "^realloc$" "^free$" "^aligned_alloc$" "^posix_memalign$" "^memalign$"
  "^_Znw" "^_Zna" "^_Zdl" "^_Zda"
  "^__cxa_allocate_exception$" "^__cxa_throw$" "^__cxa_begin_catch$" "^__gxx_personality"
  "^_ZTI" "^_ZTS" "^__dynamic_cast$" "^_Unwind_Resume$")
set(tolerated "^realloc$" "^free$")

execute_process(COMMAND ${NM} --undefined-only --format=posix ${ARCHIVE}
                OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${ARCHIVE}: ${err}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(failures "")
set(heap_refs "")
foreach(line IN LISTS lines)
  string(REGEX MATCH "^[^ ]+" symbol "${line}")
  if(NOT symbol OR symbol MATCHES ":$")
    continue()
  endif()
  foreach(pattern IN LISTS forbidden)
    if(symbol MATCHES "${pattern}")
      set(ok FALSE)
      foreach(t IN LISTS tolerated)
        if(symbol MATCHES "${t}")
          set(ok TRUE)
        endif()
      endforeach()
      if(ok)
        list(APPEND heap_refs "${symbol}")
      else()
        list(APPEND failures "${symbol}")
      endif()
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES failures)
list(REMOVE_DUPLICATES heap_refs)
if(failures)
  list(JOIN failures ", " text)
  message(FATAL_ERROR "${ARCHIVE} references forbidden symbols: ${text}")
endif()

if(heap_refs)
  list(JOIN heap_refs ", " text)
  message(STATUS "${ARCHIVE} references ${text} (built with PB_ENABLE_MALLOC; "
                 "reached only for POINTER fields)")
  # Lines end in a backslash: read the text, not a list of lines.
  file(READ "${HEADER}" header_text)
  string(REGEX MATCHALL "\nX\\(a, *[A-Z_]+," allocations "${header_text}")
  list(LENGTH allocations n)
  if(n EQUAL 0)
    message(FATAL_ERROR "no field descriptors found in ${HEADER}")
  endif()
  foreach(allocation IN LISTS allocations)
    if(NOT allocation MATCHES "STATIC,$")
      string(STRIP "${allocation}" allocation)
      message(FATAL_ERROR "${HEADER} has a non-STATIC field (${allocation}...), which "
                          "could reach the runtime's heap paths")
    endif()
  endforeach()
  message(STATUS "all ${n} fields in ${HEADER} are STATIC: the runtime's heap paths are unreachable")
else()
  message(STATUS "${ARCHIVE} references no heap, exception or RTTI symbols")
endif()
