# Fails if any SDK archive has an undefined reference to an allocator, to
# exception machinery or to RTTI. Run by CTest as sdk_no_heap_symbols:
#   cmake -DNM=<nm> -DARCHIVES="a.a;b.a" -P check_no_heap_symbols.cmake
# The runtime half of the proof is NODEFL_EXPECT_NO_HEAP in the unit tests.
if(NOT NM OR NOT ARCHIVES)
  message(FATAL_ERROR "usage: cmake -DNM=nm -DARCHIVES=a.a;b.a -P check_no_heap_symbols.cmake")
endif()
set(forbidden
  "^malloc$" "^calloc$" "^realloc$" "^free$" "^aligned_alloc$" "^posix_memalign$" "^memalign$"
  "^_Znw" "^_Zna" "^_Zdl" "^_Zda"
  "^__cxa_allocate_exception$" "^__cxa_throw$" "^__cxa_begin_catch$" "^__gxx_personality"
  "^_ZTI" "^_ZTS" "^__dynamic_cast$" "^_Unwind_Resume$")
set(failures "")
foreach(archive IN LISTS ARCHIVES)
  execute_process(COMMAND ${NM} --undefined-only --format=posix ${archive}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${archive}: ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "^[^ ]+" symbol "${line}")
    if(NOT symbol OR symbol MATCHES ":$")
      continue()
    endif()
    foreach(pattern IN LISTS forbidden)
      if(symbol MATCHES "${pattern}")
        list(APPEND failures "${archive}: ${symbol}")
      endif()
    endforeach()
  endforeach()
  message(STATUS "checked ${archive}")
endforeach()
if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "SDK archives reference heap/exception/RTTI symbols:\n  ${text}")
endif()
message(STATUS "no heap, exception or RTTI references in ${ARCHIVES}")
