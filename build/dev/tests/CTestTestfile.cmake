# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build/dev/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/build/dev/tests/core_unit_tests[1]_include.cmake")
include("/work/main/build/dev/tests/journal_unit_tests[1]_include.cmake")
include("/work/main/build/dev/tests/shards_unit_tests[1]_include.cmake")
include("/work/main/build/dev/tests/net_unit_tests[1]_include.cmake")
include("/work/main/build/dev/tests/bench_unit_tests[1]_include.cmake")
include("/work/main/build/dev/tests/property_tests[1]_include.cmake")
include("/work/main/build/dev/tests/integration_tests[1]_include.cmake")
include("/work/main/build/dev/tests/fault_tests[1]_include.cmake")
