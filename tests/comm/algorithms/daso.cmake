# DASO (ALGORITHMS.md §3): the pure schedule / phase / B-S cycle logic as a plain test, and the
# multi-rank checks on 8 ranks as 4 virtual nodes x 2 (ranks_per_node = 2 inside the test).
dplab_add_test(test_comm_daso_schedule daso_schedule_test.cpp LABELS comm TIMEOUT 60)
dplab_add_mpi_test(test_comm_daso daso_test.cpp RANKS 8 TIMEOUT 180)
set_tests_properties(test_comm_daso_np8 PROPERTIES
  ENVIRONMENT "OMP_NUM_THREADS=1;DPLAB_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
