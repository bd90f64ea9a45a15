# Runs the install test (cmake -P): install into WORK_DIR/prefix, configure and build the
# consumer against that prefix only, run it and expect "OK". Each failing step shows its output.
file(REMOVE_RECURSE "${WORK_DIR}")

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "install test: `${command}` failed (${rc}):\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

step("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
  --config "${BUILD_TYPE}")
step("${CMAKE_COMMAND}" -S "${CONSUMER_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
  "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  "-DEXPECTED_PREFIX=${WORK_DIR}/prefix")
step("${CMAKE_COMMAND}" --build "${WORK_DIR}/build" --config "${BUILD_TYPE}")
step("${WORK_DIR}/build/consumer")
if(NOT out MATCHES "^OK")
  message(FATAL_ERROR "install test: consumer printed:\n${out}")
endif()
message(STATUS "install test: ${out}")
