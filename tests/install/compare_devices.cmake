# Runs `${FRUGAL} ${ARGS} --device cpu`, then the same with --device sim, and fails unless both
# print the same epoch line (loss, train and test accuracy; times aside). Prints the sim line.
foreach(device cpu sim)
  execute_process(COMMAND ${FRUGAL} ${ARGS} --device ${device}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "frugal --device ${device} failed (${rc}):\n${out}${err}")
  endif()
  string(REGEX MATCH "epoch 1/1  loss [0-9.]+  train acc [0-9.]+%  test acc [0-9.]+%" line_${device}
    "${out}")
  if(line_${device} STREQUAL "")
    message(FATAL_ERROR "frugal --device ${device} printed no epoch line:\n${out}")
  endif()
endforeach()
if(NOT line_cpu STREQUAL line_sim)
  message(FATAL_ERROR "sim and cpu differ:\n  cpu: ${line_cpu}\n  sim: ${line_sim}")
endif()
message("sim: ${line_sim}\ncpu: ${line_cpu}")
