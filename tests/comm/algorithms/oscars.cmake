# Oscars (ALGORITHMS.md §6), local SGD / post-local SGD (§7) and slowdown injection.
# Pure functions and timing as plain tests; the strategies on 2 and 4 ranks against serial
# simulations of the N workers.
add_executable(test_comm_oscars_search ${CMAKE_CURRENT_SOURCE_DIR}/oscars_search_test.cpp
                                       ${CMAKE_CURRENT_SOURCE_DIR}/oscars_slowdown_test.cpp)
target_link_libraries(test_comm_oscars_search PRIVATE dplab_test_common GTest::gtest_main
                                                      dplab_warnings)
add_test(NAME test_comm_oscars_search COMMAND test_comm_oscars_search)
set_tests_properties(test_comm_oscars_search PROPERTIES TIMEOUT 60 LABELS "comm")

dplab_add_mpi_test(test_comm_oscars ${CMAKE_CURRENT_SOURCE_DIR}/oscars_test.cpp RANKS 2 4
                   TIMEOUT 120)
dplab_add_mpi_test(test_comm_local_sgd ${CMAKE_CURRENT_SOURCE_DIR}/local_sgd_test.cpp RANKS 2 4
                   TIMEOUT 120)
foreach(t test_comm_oscars test_comm_local_sgd)
  foreach(n 2 4)
    set_tests_properties(${t}_np${n} PROPERTIES
      ENVIRONMENT "OMP_NUM_THREADS=1;DPLAB_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  endforeach()
endforeach()
