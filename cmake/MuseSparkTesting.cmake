# One way to add a test binary: it links GoogleTest (+ RapidCheck when asked),
# registers each test with ctest under the given labels, and records why a
# GPU test may skip, so skips are visible instead of silent.
include_guard(GLOBAL)

function(musespark_add_test name)
  cmake_parse_arguments(ARG "RAPIDCHECK" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    message(FATAL_ERROR "musespark_add_test(${name}): LABELS is required (cpu, gpu, fuzz, perf, loader)")
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  if(ARG_RAPIDCHECK)
    target_link_libraries(${name} PRIVATE rapidcheck rapidcheck_gtest)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
               SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
endfunction()
