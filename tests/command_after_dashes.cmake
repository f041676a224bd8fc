# For the test scripts run as `cmake [-DVAR=...] -P script.cmake -- COMMAND ARGS...`: sets `cmd`
# to the command after the "--".
set(cmd)
set(seen FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE 1 ${last})
  if(seen)
    list(APPEND cmd "${CMAKE_ARGV${i}}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(seen TRUE)
  endif()
endforeach()
