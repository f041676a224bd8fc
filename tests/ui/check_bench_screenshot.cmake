# Runs `llmwb --bench-gui ... --bench-screenshot OUT` (the arguments after --) and checks that it
# exits 0 and that OUT is a PNG file, whatever its name ends with.
#   cmake -DOUT=path -P check_bench_screenshot.cmake -- COMMAND...
include(${CMAKE_CURRENT_LIST_DIR}/../command_after_dashes.cmake)
file(REMOVE "${OUT}")
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit ${rc}\n${out}\n${err}")
endif()
if(NOT EXISTS "${OUT}")
  message(FATAL_ERROR "no screenshot at ${OUT}\n${err}")
endif()
file(READ "${OUT}" magic LIMIT 8 HEX)
if(NOT magic STREQUAL "89504e470d0a1a0a")
  message(FATAL_ERROR "${OUT} is not a PNG (starts with ${magic})")
endif()
