# ctest docs.algorithms: fails when docs/algorithms.md differs from what the records print.
execute_process(COMMAND ${INFO} --algorithms --markdown OUTPUT_VARIABLE printed
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpia_info --algorithms --markdown failed (${rc})")
endif()
file(READ ${PAGE} committed)
if(NOT printed STREQUAL committed)
  message(FATAL_ERROR "docs/algorithms.md differs from what the algorithm records say: "
                      "regenerate it with\n  mpia_info --algorithms --markdown > docs/algorithms.md")
endif()
