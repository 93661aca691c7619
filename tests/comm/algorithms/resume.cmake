# Resume of every algorithm (issue #16): checkpoint at k steps and continue, against fresh
# objects loading every rank's model, optimizer and strategy state; bitwise equal at 4 ranks
# (DASO as 2 virtual nodes x 2).
dplab_add_mpi_test(test_comm_resume resume_test.cpp RANKS 4 TIMEOUT 180)
set_tests_properties(test_comm_resume_np4 PROPERTIES
  ENVIRONMENT "OMP_NUM_THREADS=1;DPLAB_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
