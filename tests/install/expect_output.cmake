# Runs COMMAND (a list) and passes when it exits as EXIT says (0; or "error": a non-zero exit
# status, a signal not counting) and its output, stdout and stderr merged in the order written,
# matches REGEX. CTest's PASS_REGULAR_EXPRESSION alone ignores the exit status: a run that
# printed its line and then crashed passed, and so would an error test whose command succeeded.
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(EXIT STREQUAL "0")
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "exit status ${rc}, expected 0")
  endif()
elseif(EXIT STREQUAL "error")
  if(NOT rc MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "exit status ${rc}, expected an error's (a non-zero number)")
  endif()
else()
  message(FATAL_ERROR "EXIT is '${EXIT}': 0 or error")
endif()
if(NOT out MATCHES "${REGEX}")
  message(FATAL_ERROR "the output does not match '${REGEX}'")
endif()
