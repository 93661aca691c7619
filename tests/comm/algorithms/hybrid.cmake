# Hybrid parallel SGD (comm/algorithms/hybrid.h): the schedule as a pure function (one process),
# and the strategy on 2, 4 and 8 ranks against serial computations (mnist_cnn, no BatchNorm).
add_executable(test_comm_hybrid_schedule ${CMAKE_CURRENT_SOURCE_DIR}/hybrid_schedule_test.cpp)
target_link_libraries(test_comm_hybrid_schedule PRIVATE dplab_test_common GTest::gtest_main
                                                        dplab_warnings)
add_test(NAME test_comm_hybrid_schedule COMMAND test_comm_hybrid_schedule)
set_tests_properties(test_comm_hybrid_schedule PROPERTIES TIMEOUT 60 LABELS "comm")

dplab_add_mpi_test(test_comm_hybrid ${CMAKE_CURRENT_SOURCE_DIR}/hybrid_test.cpp RANKS 1 2 4 8
                   TIMEOUT 180)
foreach(n 1 2 4 8)
  set_tests_properties(test_comm_hybrid_np${n} PROPERTIES
    ENVIRONMENT "OMP_NUM_THREADS=1;DPLAB_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endforeach()
