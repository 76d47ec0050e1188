# One way to add a test binary: it links GoogleTest (+ RapidCheck when asked),
# registers each test with ctest under the given labels, and records why a
# GPU test may skip, so skips are visible instead of silent.
include_guard(GLOBAL)

function(musespark_add_test name)
  cmake_parse_arguments(ARG "RAPIDCHECK;GPU" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    message(FATAL_ERROR "musespark_add_test(${name}): LABELS is required (cpu, gpu, fuzz, perf, loader)")
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest)
  if(ARG_GPU)
    target_link_libraries(${name} PRIVATE musespark_gpu_test_main)
  else()
    target_link_libraries(${name} PRIVATE GTest::gtest_main)
  endif()
  if(ARG_RAPIDCHECK)
    target_link_libraries(${name} PRIVATE rapidcheck rapidcheck_gtest)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  if(ARG_GPU)
    # One ctest entry per GPU binary: a process per case would spend more on
    # CUDA context start-up than on the cases. Without a device the binary
    # prints the reason and the marker below, and ctest shows it as Skipped.
    add_test(NAME ${name} COMMAND ${name} --gtest_brief=1)
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                         SKIP_REGULAR_EXPRESSION "MUSESPARK_GPU_TESTS_SKIPPED")
    return()
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 60
    NO_PRETTY_VALUES  # the case is printed by the failure report, not in every test name
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
               SKIP_REGULAR_EXPRESSION ": Skipped")  # GoogleTest prints "<file>:<line>: Skipped"; no brackets, which CMake 4 mis-quotes
endfunction()
