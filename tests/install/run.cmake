# Runs the install test (cmake -P): install into WORK_DIR/prefix, then configure and build each
# project against that prefix only, run it and expect "OK": the consumer (CONSUMER_DIR) and the
# out-of-tree layer (LAYER_DIR). Each failing step shows its output.
file(REMOVE_RECURSE "${WORK_DIR}")

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "install test: `${command}` failed (${rc}):\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# Configures, builds and runs the project in `source` (in WORK_DIR/`name`), whose executable
# `exe` must print a line starting with OK.
function(build_and_run name source exe)
  step("${CMAKE_COMMAND}" -S "${source}" -B "${WORK_DIR}/${name}" -G "${GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
    "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    "-DEXPECTED_PREFIX=${WORK_DIR}/prefix")
  step("${CMAKE_COMMAND}" --build "${WORK_DIR}/${name}" --config "${BUILD_TYPE}")
  step("${WORK_DIR}/${name}/${exe}")
  if(NOT out MATCHES "^OK")
    message(FATAL_ERROR "install test: ${exe} printed:\n${out}")
  endif()
  message(STATUS "install test: ${exe}: ${out}")
endfunction()

step("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
  --config "${BUILD_TYPE}")
build_and_run(build "${CONSUMER_DIR}" consumer)
build_and_run(layer "${LAYER_DIR}" layer_checks)
