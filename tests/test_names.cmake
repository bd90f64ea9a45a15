# Fails where a test case's name holds a character that doctest_discover_tests cannot carry into
# CTest: it makes a CMake list of the names, which cuts a name at a semicolon and joins the names
# after an unbalanced '[' into one, and CTest then runs a --test-case filter that matches no case
# and passes (17 cases with a semicolon ran that way, never, until 2026-11-30).
# cmake -DEXE=<frugal_tests> -P test_names.cmake
execute_process(COMMAND "${EXE}" --list-test-cases --no-version OUTPUT_VARIABLE listing
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${EXE} --list-test-cases exited with ${status}")
endif()
string(ASCII 59 semicolon)
string(ASCII 91 open)
string(ASCII 93 close)
string(REPLACE "${semicolon}" "<semicolon>" listing "${listing}")
string(REPLACE "${open}" "<open>" listing "${listing}")
string(REPLACE "${close}" "<close>" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(bad "")
foreach(line IN LISTS lines)
  if(line MATCHES "^<open>doctest<close> ")  # the listing's own header and footer
    continue()
  endif()
  if(line MATCHES "<(semicolon|open|close)>")
    string(REPLACE "<semicolon>" "${semicolon}" line "${line}")
    string(REPLACE "<open>" "${open}" line "${line}")
    string(REPLACE "<close>" "${close}" line "${line}")
    string(APPEND bad "\n  ${line}")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "test case names with ';', '[' or ']' (CTest would run none of them):${bad}")
endif()
