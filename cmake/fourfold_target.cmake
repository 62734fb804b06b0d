# fourfold_layer(NAME SOURCES ... [TORCH] [DEPENDS targets...])
# One static library per layer of DESIGN.md, exported as fourfold::NAME. TORCH marks a layer
# that faces libtorch: it links fourfold::torch and gets a precompiled ATen header, which is
# what keeps a 2-core build tolerable.
function(fourfold_layer name)
    cmake_parse_arguments(arg "TORCH" "" "SOURCES;DEPENDS" ${ARGN})
    add_library(fourfold_${name} STATIC ${arg_SOURCES})
    add_library(fourfold::${name} ALIAS fourfold_${name})
    target_include_directories(fourfold_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_compile_features(fourfold_${name} PUBLIC cxx_std_20)
    set_target_properties(fourfold_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    fourfold_warnings(fourfold_${name})
    if(arg_DEPENDS)
        target_link_libraries(fourfold_${name} PUBLIC ${arg_DEPENDS})
    endif()
    if(arg_TORCH)
        target_link_libraries(fourfold_${name} PUBLIC fourfold::torch)
        target_precompile_headers(fourfold_${name} PRIVATE <ATen/ATen.h>)
    endif()
endfunction()

function(fourfold_warnings target)
    target_compile_options(${target} PRIVATE
        $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
    if(FOURFOLD_WERROR)
        target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
    endif()
endfunction()

# fourfold_link_all(TARGET): links every layer, every workload and every suite into an
# executable (the registering object libraries are linked directly, see workloads/).
function(fourfold_link_all target)
    target_link_libraries(${target} PRIVATE fourfold_workload_set fourfold_suite_set
        fourfold_runner fourfold_report fourfold_store)
endfunction()
