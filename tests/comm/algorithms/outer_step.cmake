# DiLoCo and SlowMo (comm/algorithms/diloco.h, slowmo.h): the strategies on 2 and 4 ranks against
# serial simulations of the N workers and of the papers' outer steps.
dplab_add_mpi_test(test_comm_outer_step ${CMAKE_CURRENT_SOURCE_DIR}/outer_step_test.cpp RANKS 2 4
                   TIMEOUT 120)
foreach(n 2 4)
  set_tests_properties(test_comm_outer_step_np${n} PROPERTIES
    ENVIRONMENT "OMP_NUM_THREADS=1;DPLAB_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endforeach()
# Streaming DiLoCo (comm/algorithms/streaming_diloco.h) on the same harness.
dplab_add_mpi_test(test_comm_streaming_diloco ${CMAKE_CURRENT_SOURCE_DIR}/streaming_diloco_test.cpp
                   RANKS 2 4 TIMEOUT 120)
foreach(n 2 4)
  set_tests_properties(test_comm_streaming_diloco_np${n} PROPERTIES
    ENVIRONMENT "OMP_NUM_THREADS=1;DPLAB_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endforeach()
# Streaming DiLoCo's quantised exchange: wire bytes per outer step against the f32 allreduce,
# measured at 2 and 8 ranks and computed for 8 and 32.
dplab_add_mpi_test(test_comm_streaming_wire ${CMAKE_CURRENT_SOURCE_DIR}/streaming_wire_test.cpp
                   RANKS 2 8 TIMEOUT 180)
foreach(n 2 8)
  set_tests_properties(test_comm_streaming_wire_np${n} PROPERTIES
    ENVIRONMENT "OMP_NUM_THREADS=1;DPLAB_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endforeach()
