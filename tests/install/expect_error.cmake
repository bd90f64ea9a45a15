# Runs FRUGAL with ARGS and passes when the command fails as a user should see it: a non-zero
# exit status (a crash does not count), stderr exactly one line "error: ..." matching ERROR,
# nothing on stdout (it failed before any training began), and, when EMPTY_DIR is given
# (created empty first), nothing left there.
if(DEFINED EMPTY_DIR)
  file(REMOVE_RECURSE "${EMPTY_DIR}")
  file(MAKE_DIRECTORY "${EMPTY_DIR}")
endif()
execute_process(COMMAND ${FRUGAL} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
if(NOT rc MATCHES "^[1-9][0-9]*$")  # 0, or a signal's name: not an error exit
  message(FATAL_ERROR "exit ${rc}, expected an error's status\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT err MATCHES "^error: [^\n]*\n$")
  message(FATAL_ERROR "stderr is not one line starting 'error: ':\n${err}")
endif()
if(NOT err MATCHES "${ERROR}")
  message(FATAL_ERROR "stderr does not match '${ERROR}':\n${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "printed before failing:\n${out}")
endif()
if(DEFINED EMPTY_DIR)
  file(GLOB left "${EMPTY_DIR}/*")
  if(left)
    message(FATAL_ERROR "left behind: ${left}")
  endif()
endif()
message(STATUS "exit ${rc}: ${err}")
