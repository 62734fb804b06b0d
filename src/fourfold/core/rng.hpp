#pragma once
// Deterministic random numbers that do not depend on the standard library or libtorch version,
// so a seed means the same numbers on every machine and build.
#include <cmath>
#include <cstdint>

namespace fourfold {

constexpr std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Uniform in [0, 1) from the top 53 bits.
constexpr double unit_interval(std::uint64_t bits) {
    return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

// xoshiro256** seeded through splitmix64.
class xoshiro256 {
  public:
    explicit constexpr xoshiro256(std::uint64_t seed) {
        for (auto& s : m_state)
            s = seed = splitmix64(seed);
    }
    constexpr std::uint64_t next() {
        const std::uint64_t result = rotl(m_state[1] * 5, 7) * 9;
        const std::uint64_t t = m_state[1] << 17;
        m_state[2] ^= m_state[0];
        m_state[3] ^= m_state[1];
        m_state[1] ^= m_state[2];
        m_state[0] ^= m_state[3];
        m_state[2] ^= t;
        m_state[3] = rotl(m_state[3], 45);
        return result;
    }
    // Uniform integer in [0, bound) (Lemire's multiply-shift; bias below 2^-32 for our sizes).
    std::uint64_t below(std::uint64_t bound) {
        return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
    }
    double uniform() { return unit_interval(next()); }
    double normal() {
        const double u1 = 1.0 - uniform();
        const double u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }

  private:
    static constexpr std::uint64_t rotl(std::uint64_t x, int k) {
        return (x << k) | (x >> (64 - k));
    }
    std::uint64_t m_state[4]{};
};

} // namespace fourfold
