# ctest tools.options_doc: regenerates the option reference into OUT and fails when it differs
# from the committed DOC (docs/options.md), naming the command that brings the file up to date.
# Arguments: -DGENERATOR=<dplab_options_doc> -DDOC=<docs/options.md> -DOUT=<temporary file>
execute_process(COMMAND ${GENERATOR} OUTPUT_FILE ${OUT} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${GENERATOR} failed (${rc}): ${err}")
endif()
if(NOT EXISTS ${DOC})
  message(FATAL_ERROR "${DOC} is missing; generate it with: ${GENERATOR} > ${DOC}")
endif()
file(READ ${OUT} generated)
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  execute_process(COMMAND diff -u ${DOC} ${OUT} OUTPUT_VARIABLE d)
  message(FATAL_ERROR "${DOC} disagrees with the option tables (diff below: - committed, + "
                      "generated). Regenerate it with:\n  ${GENERATOR} > ${DOC}\n${d}")
endif()
message(STATUS "${DOC} agrees with the option tables")
