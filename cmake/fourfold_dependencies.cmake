# Third-party dependencies, all from Debian packages (see README). Each one is looked up by its
# CMake package first; where a machine has only the headers (the GPU image carries CLI11, fmt and
# nlohmann headers but not every config file), an equivalent imported target is made from them.

find_package(Threads REQUIRED)

find_package(nlohmann_json 3.10 CONFIG QUIET)
if(NOT TARGET nlohmann_json::nlohmann_json)
    find_path(FOURFOLD_NLOHMANN_INCLUDE nlohmann/json.hpp REQUIRED)
    add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
    target_include_directories(nlohmann_json::nlohmann_json INTERFACE ${FOURFOLD_NLOHMANN_INCLUDE})
endif()

find_package(CLI11 CONFIG QUIET)
if(NOT TARGET CLI11::CLI11)
    find_path(FOURFOLD_CLI11_INCLUDE CLI/CLI.hpp REQUIRED)
    add_library(CLI11::CLI11 INTERFACE IMPORTED)
    target_include_directories(CLI11::CLI11 INTERFACE ${FOURFOLD_CLI11_INCLUDE})
endif()

# FOURFOLD_FMT_HEADER_ONLY: for machines whose fmt headers and libfmt differ in version (the GPU
# image has v12 headers beside libfmt.so.9); fmt is then compiled into each user.
option(FOURFOLD_FMT_HEADER_ONLY "Use fmt header-only, ignoring any libfmt" OFF)
if(NOT FOURFOLD_FMT_HEADER_ONLY)
    find_package(fmt CONFIG QUIET)
endif()
if(FOURFOLD_FMT_HEADER_ONLY)
    find_path(FOURFOLD_FMT_INCLUDE fmt/format.h REQUIRED)
    add_library(fmt::fmt INTERFACE IMPORTED)
    target_include_directories(fmt::fmt INTERFACE ${FOURFOLD_FMT_INCLUDE})
    target_compile_definitions(fmt::fmt INTERFACE FMT_HEADER_ONLY=1)
elseif(NOT TARGET fmt::fmt)
    find_path(FOURFOLD_FMT_INCLUDE fmt/format.h REQUIRED)
    find_library(FOURFOLD_FMT_LIBRARY NAMES fmt libfmt.so.9 libfmt.so.10)
    add_library(fmt::fmt INTERFACE IMPORTED)
    target_include_directories(fmt::fmt INTERFACE ${FOURFOLD_FMT_INCLUDE})
    if(FOURFOLD_FMT_LIBRARY)
        target_link_libraries(fmt::fmt INTERFACE ${FOURFOLD_FMT_LIBRARY})
    else()
        target_compile_definitions(fmt::fmt INTERFACE FMT_HEADER_ONLY=1)
    endif()
endif()

# CMake's FindSQLite3 honours SQLite3_INCLUDE_DIR / SQLite3_LIBRARY given on the command line.
find_package(SQLite3 REQUIRED)

if(FOURFOLD_BUILD_TESTS)
    find_package(GTest QUIET)
    if(NOT TARGET GTest::gtest_main)
        # Debian's googletest package ships the sources; build them as part of the tree.
        find_path(FOURFOLD_GTEST_SOURCE CMakeLists.txt
                  PATHS /usr/src/googletest ${CMAKE_CURRENT_SOURCE_DIR}/.deps/googletest
                  NO_DEFAULT_PATH REQUIRED)
        set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
        set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
        add_subdirectory(${FOURFOLD_GTEST_SOURCE} ${CMAKE_BINARY_DIR}/_googletest EXCLUDE_FROM_ALL)
        add_library(GTest::gtest ALIAS gtest)
        add_library(GTest::gtest_main ALIAS gtest_main)
    endif()
    include(GoogleTest)
endif()
