# Included by the top-level CMakeLists.txt when FOURFOLD_FUZZ is ON: builds fuzz/ with clang and
# registers, per target, a pass over its corpus in the repository and a short run (seconds) that
# writes what it finds into the build tree, never into the corpus.
find_program(FOURFOLD_CLANGXX NAMES clang++ clang++-14 REQUIRED)
set(FOURFOLD_FUZZ_SECONDS 5 CACHE STRING "seconds of each fuzz target's short ctest run")
include(ExternalProject)
set(_fuzz_bin ${CMAKE_BINARY_DIR}/fuzz)
set(_fuzz_launcher)
if(CMAKE_CXX_COMPILER_LAUNCHER)
    set(_fuzz_launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
ExternalProject_Add(fourfold_fuzz
    SOURCE_DIR ${PROJECT_SOURCE_DIR}/fuzz
    BINARY_DIR ${_fuzz_bin}
    CMAKE_ARGS -DCMAKE_CXX_COMPILER=${FOURFOLD_CLANGXX} -DCMAKE_BUILD_TYPE=RelWithDebInfo
               ${_fuzz_launcher}
    INSTALL_COMMAND ""
    BUILD_ALWAYS ON)
foreach(_t channel stored_figures store_bytes model_config safetensors_header plan_grammar
           settings_request)
    set(_corpus ${PROJECT_SOURCE_DIR}/fuzz/corpus/${_t})
    add_test(NAME fuzz.${_t}.corpus COMMAND ${_fuzz_bin}/fuzz_${_t} -runs=0 ${_corpus})
    add_test(NAME fuzz.${_t}.short
             COMMAND sh -c "mkdir -p '${_fuzz_bin}/found/${_t}' && exec '${_fuzz_bin}/fuzz_${_t}' -max_total_time=${FOURFOLD_FUZZ_SECONDS} -timeout=10 -rss_limit_mb=2048 '${_fuzz_bin}/found/${_t}' '${_corpus}'")
    set_tests_properties(fuzz.${_t}.corpus fuzz.${_t}.short PROPERTIES LABELS "cpu;fuzz"
                         TIMEOUT 300)
endforeach()
