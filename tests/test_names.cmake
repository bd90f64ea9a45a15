# Fails where a test case's name holds a semicolon: doctest_discover_tests makes a CMake list of
# the names, which cuts such a name there, and CTest then runs `--test-case=<the first part>`,
# which matches no case and passes (17 cases ran that way, never, until 2026-11-30).
# cmake -DEXE=<frugal_tests> -P test_names.cmake
execute_process(COMMAND "${EXE}" --list-test-cases --no-version OUTPUT_VARIABLE listing
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${EXE} --list-test-cases exited with ${status}")
endif()
string(ASCII 59 semicolon)
string(REPLACE "${semicolon}" "<semicolon>" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(bad "")
foreach(line IN LISTS lines)
  if(line MATCHES "<semicolon>")
    string(REPLACE "<semicolon>" "${semicolon}" line "${line}")
    string(APPEND bad "\n  ${line}")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "test case names with a semicolon (CTest would run none of them):${bad}")
endif()
