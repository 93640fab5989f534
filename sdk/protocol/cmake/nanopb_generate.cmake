# Runs nanopb_generator.py on one .proto (its .options file sits next to it)
# and checks the result before it replaces the previous output. Invoked by the
# add_custom_command in sdk/protocol/CMakeLists.txt:
#
#   cmake -DGENERATOR=<nanopb_generator.py> -DPROTO_DIR=<import root>
#         -DPROTO=<path below PROTO_DIR, e.g. nodefl/protocol/envelope.proto>
#         -DOUT_DIR=<output root> -P nanopb_generate.cmake
#
# Writes <OUT_DIR>/<dir of PROTO>/<name>.pb.{h,c}. Checks:
#   * every .options entry matched a field (--error-on-unmatched), so a typo
#     cannot silently leave a field unbounded;
#   * every field is STATIC: no CALLBACK fields (they would need caller code)
#     and no POINTER fields (they would need PB_ENABLE_MALLOC and the heap).
#     This is what makes the malloc paths of a PB_ENABLE_MALLOC nanopb
#     runtime (Debian's libprotobuf-nanopb.a is built that way) unreachable
#     from the SDK: nanopb allocates and frees only for POINTER fields.
foreach(var IN ITEMS GENERATOR PROTO_DIR PROTO OUT_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "nanopb_generate.cmake: -D${var}=... is required")
  endif()
endforeach()

get_filename_component(rel_dir "${PROTO}" DIRECTORY)
get_filename_component(stem "${PROTO}" NAME_WE)
set(tmp "${OUT_DIR}/.nanopb-tmp-${stem}")
file(REMOVE_RECURSE "${tmp}")
file(MAKE_DIRECTORY "${tmp}")

execute_process(
  COMMAND "${GENERATOR}" --quiet --error-on-unmatched -I "${PROTO_DIR}" -D "${tmp}" "${PROTO}"
  WORKING_DIRECTORY "${PROTO_DIR}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nanopb_generator.py failed on ${PROTO} (exit ${rc}):\n${out}${err}")
endif()

set(gen_h "${tmp}/${rel_dir}/${stem}.pb.h")
set(gen_c "${tmp}/${rel_dir}/${stem}.pb.c")
foreach(f IN ITEMS "${gen_h}" "${gen_c}")
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "nanopb_generator.py did not write ${f}:\n${out}${err}")
  endif()
endforeach()

# Field descriptors look like
#   X(a, STATIC,   SINGULAR, UINT32,   version,           1) \
# (lines end in a backslash, so read the text rather than a list of lines).
file(READ "${gen_h}" header_text)
string(REGEX MATCHALL "\nX\\(a, *[A-Z_]+,[^\n\\]*" fields "${header_text}")
list(LENGTH fields field_count)
if(field_count EQUAL 0)
  message(FATAL_ERROR "${PROTO}: no field descriptors found in the generated header")
endif()
set(bad "")
foreach(field IN LISTS fields)
  string(STRIP "${field}" field)
  if(NOT field MATCHES "^X\\(a, *STATIC,")
    list(APPEND bad "${field}")
  endif()
endforeach()
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "${PROTO}: fields without a static bound (add max_size/max_count "
                      "to the .options file; the SDK must not use callbacks or the heap):\n  ${text}")
endif()

file(MAKE_DIRECTORY "${OUT_DIR}/${rel_dir}")
file(RENAME "${gen_h}" "${OUT_DIR}/${rel_dir}/${stem}.pb.h")
file(RENAME "${gen_c}" "${OUT_DIR}/${rel_dir}/${stem}.pb.c")
file(REMOVE_RECURSE "${tmp}")
