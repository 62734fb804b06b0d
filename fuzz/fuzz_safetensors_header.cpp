// A safetensors file's header (workloads/models/safetensors_header.hpp) from arbitrary bytes:
// the bytes as a whole file (the 8-byte length, the JSON, every entry checked against the data
// that follows) and as the header text alone against a data section of the input's size. Either
// is refused with bad_input, or the entries it returns cover the data exactly, each of the size
// its dtype and shape need, and the header written back from them reads back the same. Anything
// else (another exception, an entry that breaks those rules, a sanitizer report) is a crash.
#include "fourfold/core/error.hpp"
#include "fourfold/workloads/models/safetensors_header.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

using namespace fourfold;
using namespace fourfold::workloads::models;

void check(bool ok) {
    if (!ok)
        std::abort();
}

void check_header(const safetensors_header& h, std::uint64_t data_bytes) {
    std::uint64_t covered = 0;
    json rebuilt = json::object();
    for (const auto& e : h.entries) {
        const auto element = safetensors_dtype_bytes(e.dtype);
        check(element > 0);
        check(e.shape.size() <= k_safetensors_max_dims);
        check(e.begin <= e.end && e.end <= data_bytes);
        unsigned __int128 numel = 1;
        for (const auto d : e.shape) {
            check(d >= 0);
            numel *= static_cast<unsigned __int128>(d);
        }
        check(numel * static_cast<unsigned __int128>(element) == e.end - e.begin);
        covered += e.end - e.begin;
        rebuilt[e.name] =
            json{{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
    }
    check(covered == data_bytes); // no hole and no overlap: the sizes add up to the data
    if (!h.metadata.empty())
        rebuilt["__metadata__"] = h.metadata;
    const auto again = parse_safetensors_header(rebuilt.dump(), data_bytes, "rebuilt");
    check(again.entries.size() == h.entries.size());
    for (std::size_t i = 0; i < h.entries.size(); ++i) {
        const auto& a = again.entries[i];
        const auto& b = h.entries[i];
        check(a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.begin == b.begin &&
              a.end == b.end);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    try {
        const auto h = parse_safetensors_bytes(bytes, "fuzz");
        const auto n = static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[0])) |
                       std::uint64_t{static_cast<unsigned char>(bytes[1])} << 8 |
                       std::uint64_t{static_cast<unsigned char>(bytes[2])} << 16 |
                       std::uint64_t{static_cast<unsigned char>(bytes[3])} << 24 |
                       std::uint64_t{static_cast<unsigned char>(bytes[4])} << 32 |
                       std::uint64_t{static_cast<unsigned char>(bytes[5])} << 40 |
                       std::uint64_t{static_cast<unsigned char>(bytes[6])} << 48 |
                       std::uint64_t{static_cast<unsigned char>(bytes[7])} << 56;
        check(size >= 8 && n <= size - 8);
        check_header(h, size - 8 - n);
    } catch (const bad_input&) {
        // the reader's documented refusal
    }
    try {
        check_header(parse_safetensors_header(bytes, size, "fuzz"), size);
    } catch (const bad_input&) {
    }
    return 0;
}
