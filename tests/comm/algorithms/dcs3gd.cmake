# DC-S3GD (ALGORITHMS.md §4). Included from tests/comm/CMakeLists.txt (paths relative to
# tests/comm). Power-of-two rank counts: the same-data test needs R/N = S exactly.
dplab_add_mpi_test(test_comm_dcs3gd ${CMAKE_CURRENT_SOURCE_DIR}/dcs3gd_test.cpp
  RANKS 1 2 4 8 TIMEOUT 120)
foreach(n 1 2 4 8)
  set_tests_properties(test_comm_dcs3gd_np${n} PROPERTIES
    ENVIRONMENT "OMP_NUM_THREADS=1;DPLAB_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endforeach()

# Step-time benchmark of studies/dcs3gd (eq. 13 vs eq. 14); not a test, built on demand.
add_executable(dcs3gd_bench EXCLUDE_FROM_ALL ${CMAKE_CURRENT_SOURCE_DIR}/dcs3gd_bench.cpp)
target_link_libraries(dcs3gd_bench PRIVATE dplab dplab_warnings MPI::MPI_C)
