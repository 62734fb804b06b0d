#include "test_variants.hpp"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    fourfold::testing::register_test_variants();
    return RUN_ALL_TESTS();
}
