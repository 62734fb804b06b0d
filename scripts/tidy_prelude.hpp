// Included first into every translation unit that scripts/check_tidy.sh hands clang-tidy; never
// part of the build. libtorch 1.13's ATen/core (List.h, ivalue_inl.h) uses std::vector<IValue>
// members while IValue is still incomplete. GCC accepts that; clang in C++20 does not, because
// libstdc++ 12 makes vector's members constexpr and clang instantiates a constexpr function
// where it is first referenced (llvm/llvm-project#62166, #57700), so the parse of any unit that
// includes <ATen/ATen.h> stops with "arithmetic on a pointer to an incomplete type
// 'c10::IValue'". Here <vector> (libstdc++ 12 only) is read once with _GLIBCXX20_CONSTEXPR empty:
// its members are then ordinary inline functions, instantiated at the end of the unit as in
// C++17. The rest of the library keeps its constexpr. bits/stl_bvector.h defines the
// vector<bool> overload of std::__fill_a1 that bits/stl_algobase.h declares constexpr; that
// definition is renamed so the two declarations do not clash (std::fill on vector<bool>
// iterators then has no body for clang-tidy, which never runs the code).
// What clang-tidy sees differs from the build only in that std::vector is not usable in
// constant expressions; fourfold does not use it there.
#pragma once
#include <bits/c++config.h>
#if defined(__GLIBCXX__) && _GLIBCXX_RELEASE == 12 && __cplusplus >= 202002L
#include <algorithm>
#include <memory>
#include <string>
#pragma push_macro("_GLIBCXX20_CONSTEXPR")
#undef _GLIBCXX20_CONSTEXPR
#define _GLIBCXX20_CONSTEXPR
#define __fill_a1 fourfold_tidy_bvector_fill_a1
#include <vector>
#undef __fill_a1
#pragma pop_macro("_GLIBCXX20_CONSTEXPR")
#endif
