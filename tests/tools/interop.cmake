# Checkpoint interop with torchvision (tools/scripts/resnet_roundtrip.py): dplab init -> strict
# load + same eval logits in PyTorch, and a PyTorch state_dict -> dplab predict. Needs the
# Debian python3-torch / python3-torchvision; skipped at configure time without them.
execute_process(COMMAND /usr/bin/python3 -c "import torch, torchvision"
                RESULT_VARIABLE DPLAB_HAVE_TORCHVISION OUTPUT_QUIET ERROR_QUIET)
if(DPLAB_HAVE_TORCHVISION EQUAL 0)
  # ResNet-18 at 224x224, batch 2 keeps the test short; resnet50 passes the same script by hand
  # (--model resnet50).
  add_test(NAME tools.interop.resnet18_roundtrip
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/tools/scripts/resnet_roundtrip.py
                   --dplab $<TARGET_FILE:dplab_cli> --model resnet18 --batch 2 --size 224
                   --threads 1 --workdir ${CMAKE_CURRENT_BINARY_DIR}/interop_resnet18)
  set_tests_properties(tools.interop.resnet18_roundtrip PROPERTIES LABELS "interop;tools"
                                                                   TIMEOUT 300)
else()
  message(STATUS "torchvision not found for /usr/bin/python3: interop tests not registered")
endif()
