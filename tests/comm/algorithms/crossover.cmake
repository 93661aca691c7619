# Crossover-SGD and its SGP baseline (ALGORITHMS.md §5). Included from tests/comm/CMakeLists.txt.
dplab_add_mpi_test(test_comm_crossover ${CMAKE_CURRENT_SOURCE_DIR}/crossover_test.cpp
  RANKS 2 3 4 8 TIMEOUT 120)
dplab_add_mpi_test(test_comm_sgp ${CMAKE_CURRENT_SOURCE_DIR}/sgp_test.cpp
  RANKS 2 3 5 8 TIMEOUT 120)
foreach(t test_comm_crossover_np2 test_comm_crossover_np3 test_comm_crossover_np4
          test_comm_crossover_np8 test_comm_sgp_np2 test_comm_sgp_np3 test_comm_sgp_np5
          test_comm_sgp_np8)
  set_tests_properties(${t} PROPERTIES
    ENVIRONMENT "OMP_NUM_THREADS=1;DPLAB_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endforeach()
