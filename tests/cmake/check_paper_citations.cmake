# Fails when code or docs cite a paper by its seed file name (NNN_<16 hex>)
# instead of by name and section ("FedWalk Sec. 4.2", "Lumos Eq. 26").
# Usage: cmake -DROOT=<repository> -P check_paper_citations.cmake
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<repository> -P check_paper_citations.cmake")
endif()
set(found "")
foreach(dir sdk server examples docs tests toolchains)
  file(GLOB_RECURSE files LIST_DIRECTORIES false
       "${ROOT}/${dir}/*.h" "${ROOT}/${dir}/*.cc" "${ROOT}/${dir}/*.c" "${ROOT}/${dir}/*.md"
       "${ROOT}/${dir}/*.sh" "${ROOT}/${dir}/*.py" "${ROOT}/${dir}/*.txt" "${ROOT}/${dir}/*.cmake"
       "${ROOT}/${dir}/*.proto")
  foreach(file IN LISTS files)
    if(file MATCHES "check_paper_citations\\.cmake$")
      continue()
    endif()
    file(STRINGS "${file}" hits REGEX "[0-9][0-9][0-9]_[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]")
    if(hits)
      file(RELATIVE_PATH rel "${ROOT}" "${file}")
      list(APPEND found "${rel}")
    endif()
  endforeach()
endforeach()
if(found)
  list(JOIN found "\n  " listing)
  message(FATAL_ERROR "cite papers by name and section, not by seed file name:\n  ${listing}")
endif()
message(STATUS "no seed file names cited")
