// The safetensors reader: real files written here round-trip every dtype; malformed, truncated
// and hostile files (and sharded indexes) each give a bad_input that names the file and the
// problem, and random corruption of a valid file never crashes or reads out of bounds.
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/rng.hpp"
#include "fourfold/workloads/models/safetensors.hpp"
#include "test_helpers.hpp"

#include <ATen/ATen.h>
#include <filesystem>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::workloads::models;
using fourfold::testing::temp_dir;

namespace {

// A file from its parts: the 8-byte little-endian header length (or any value given), the
// header text, then the data bytes.
std::string raw_file(const std::string& header, const std::string& data,
                     std::optional<std::uint64_t> length = std::nullopt) {
    std::uint64_t n = length.value_or(header.size());
    std::string out;
    for (int i = 0; i < 8; ++i) {
        out.push_back(static_cast<char>(n & 0xff));
        n >>= 8;
    }
    return out + header + data;
}

std::string raw_bytes(const at::Tensor& t) {
    const auto c = t.contiguous();
    return std::string(static_cast<const char*>(c.data_ptr()),
                       static_cast<std::size_t>(c.numel()) * c.element_size());
}

// Expects opening `path` to throw bad_input whose message holds every needle.
void expect_refused(const std::filesystem::path& path, const std::vector<std::string>& needles) {
    try {
        safetensors_file f(path);
        FAIL() << path << " was accepted";
    } catch (const bad_input& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
        for (const auto& n : needles)
            EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
    }
}

void expect_file_refused(const temp_dir& dir, const std::string& bytes,
                         const std::vector<std::string>& needles) {
    static int counter = 0;
    const auto path = dir / ("bad" + std::to_string(counter++) + ".safetensors");
    fourfold::testing::write_file(path, bytes);
    expect_refused(path, needles);
}

} // namespace

TEST(safetensors, every_float_dtype_round_trips_with_metadata) {
    temp_dir dir;
    named_tensors tensors{
        {"f32", at::randn({3, 5})},
        {"bf16", at::randn({4, 2}).to(at::kBFloat16)},
        {"f16", at::randn({7}).to(at::kHalf)},
        {"f64", at::randn({2, 2, 2}, at::TensorOptions().dtype(at::kDouble))},
        {"i64", at::arange(10, at::TensorOptions().dtype(at::kLong))},
        {"scalar", at::randn({})},
        {"empty", at::empty({0, 4})},
    };
#if FOURFOLD_HAS_FLOAT8
    tensors.emplace_back("f8_e4m3", at::randn({6, 3}).to(at::kFloat8_e4m3fn));
    tensors.emplace_back("f8_e5m2", at::randn({5}).to(at::kFloat8_e5m2));
#endif
    const auto path = dir / "all.safetensors";
    write_safetensors(path, tensors, json{{"format", "pt"}});
    safetensors_file f(path);
    EXPECT_EQ(f.metadata()["format"], "pt");
    ASSERT_EQ(f.entries().size(), tensors.size());
    for (const auto& [name, t] : tensors) {
        const auto* e = f.find(name);
        ASSERT_NE(e, nullptr) << name;
        EXPECT_EQ(e->shape, t.sizes().vec()) << name;
        const auto back = f.read(*e);
        EXPECT_EQ(back.scalar_type(), t.scalar_type()) << name;
        EXPECT_EQ(raw_bytes(back), raw_bytes(t)) << name; // float8 has no == on every build
    }
    // the format's alignment: the data starts at a multiple of 8
    const auto bytes = fourfold::testing::read_file(path);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
    EXPECT_EQ((8 + n) % 8, 0u);
}

TEST(safetensors, truncated_files_and_lengths_past_the_end_are_refused) {
    temp_dir dir;
    const auto good = dir / "good.safetensors";
    write_safetensors(good, {{"w", at::randn({16, 16})}});
    const auto bytes = fourfold::testing::read_file(good);
    expect_file_refused(dir, bytes.substr(0, bytes.size() - 1),
                        {"'w'", "past the end of the data", "truncated"});
    expect_file_refused(dir, bytes.substr(0, 100), {"past the end"});
    expect_file_refused(dir, bytes.substr(0, 5), {"too short"});
    expect_file_refused(dir, "", {"too short"});
    // header length past the end of the file, also with the largest 64-bit value
    expect_file_refused(dir, raw_file("{}", "", 1000), {"header length 1000", "past the end"});
    expect_file_refused(dir, raw_file("{}", "", ~std::uint64_t{0}), {"past the end"});
    expect_file_refused(dir, raw_file("{}", "", 0), {"cannot hold"});
}

TEST(safetensors, overlapping_offsets_holes_and_wrong_sizes_are_refused) {
    temp_dir dir;
    const std::string data(16, '\0');
    expect_file_refused(dir,
                        raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                 data.substr(0, 12)),
                        {"'a'", "'b'", "overlap"});
    expect_file_refused(dir,
                        raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                 R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                 data.substr(0, 12)),
                        {"[4, 8)", "no tensor"});
    // wrong dtype size: 3 F32 values need 12 bytes, the offsets give 6
    expect_file_refused(
        dir,
        raw_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,6]}})", data.substr(0, 6)),
        {"'w'", "holds 6 bytes", "needs 12", "wrong dtype size"});
    // a BF16 tensor declared with F32's byte count
    expect_file_refused(
        dir, raw_file(R"({"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,16]}})", data),
        {"needs 8", "2 bytes per element"});
    expect_file_refused(dir,
                        raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", data),
                        {"end before they begin"});
    // data after the last tensor
    expect_file_refused(dir,
                        raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data),
                        {"holds 16 bytes", "cover 4"});
}

TEST(safetensors, hostile_headers_are_refused_with_the_reason) {
    temp_dir dir;
    const std::string four(4, '\0');
    const std::vector<std::pair<std::string, std::string>> cases{
        {"not json at all", "not valid JSON"},
        {R"(["a list"])", "not a JSON object"},
        {R"({"w":{"dtype":"F7","shape":[1],"data_offsets":[0,4]}})", "valid: BOOL"},
        {R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "not a whole number"},
        {R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "not a whole number"},
        {R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]}})",
         "overflows"},
        {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "data_offsets"},
        {R"({"w":{"dtype":"F32","shape":[1]}})", "data_offsets"},
        {R"({"w":{"shape":[1],"data_offsets":[0,4]}})", "no dtype"},
        {R"({"w":"tensor"})", "not an object"},
        {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
         "named twice"},
        {R"({"__metadata__":[1],"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
         "__metadata__"},
        {std::string(1000, '[') + std::string(1000, ']'), "nests deeper"},
    };
    for (const auto& [header, needle] : cases)
        expect_file_refused(dir, raw_file(header, four), {needle});
}

TEST(safetensors, random_corruption_never_crashes) {
    temp_dir dir;
    const auto good = dir / "good.safetensors";
    write_safetensors(good, {{"a", at::randn({8, 3})},
                             {"b", at::randn({5}).to(at::kBFloat16)},
                             {"c", at::arange(4, at::TensorOptions().dtype(at::kLong))}});
    const auto bytes = fourfold::testing::read_file(good);
    xoshiro256 rng(7);
    const auto path = dir / "mutant.safetensors";
    int accepted = 0, refused = 0;
    for (int i = 0; i < 400; ++i) {
        auto m = bytes;
        const auto kind = rng.below(3);
        if (kind == 0)
            m.resize(rng.below(m.size()));
        else
            for (std::uint64_t k = 0, n = 1 + rng.below(4); k < n; ++k)
                m[rng.below(m.size())] = static_cast<char>(rng.below(256));
        fourfold::testing::write_file(path, m);
        try {
            safetensors_file f(path);
            for (const auto& e : f.entries()) {
                try {
                    (void)f.read(e); // a dtype this libtorch lacks is refused; any other is read
                } catch (const bad_input&) {
                }
            }
            ++accepted;
        } catch (const bad_input&) {
            ++refused;
        }
    }
    EXPECT_GT(refused, 100);
    EXPECT_EQ(accepted + refused, 400);
}

TEST(safetensors, a_sharded_checkpoint_reads_through_its_index) {
    temp_dir dir;
    named_tensors tensors;
    for (int i = 0; i < 6; ++i)
        tensors.emplace_back("t" + std::to_string(i), at::randn({32, 8}));
    write_sharded_checkpoint(dir.path(), tensors, 3 * 32 * 8 * 4);
    EXPECT_TRUE(fourfold::path_exists(dir / "model-00001-of-00002.safetensors"));
    checkpoint ck(dir.path());
    EXPECT_TRUE(ck.indexed());
    EXPECT_EQ(ck.file_count(), 2u);
    for (const auto& [name, t] : tensors)
        EXPECT_TRUE(at::equal(ck.read(name), t)) << name;
    EXPECT_THROW((void)ck.entry("nosuch"), bad_input);
}

TEST(safetensors, hostile_or_broken_indexes_are_refused) {
    auto refused = [](const std::string& index, const std::string& needle) {
        temp_dir dir;
        write_safetensors(dir / "a.safetensors", {{"x", at::randn({2})}});
        fourfold::testing::write_file(dir / "model.safetensors.index.json", index);
        try {
            checkpoint ck(dir.path());
            ADD_FAILURE() << index << " was accepted";
        } catch (const bad_input& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    refused(R"({"weight_map":{"x":"../a.safetensors"}})", "not a plain file name");
    refused(R"({"weight_map":{"x":"/etc/passwd"}})", "not a plain file name");
    refused(R"({"weight_map":{"x":"b.safetensors"}})", "missing");
    refused(R"({"weight_map":{"y":"a.safetensors"}})", "no such tensor");
    refused(R"({"weight_map":{"x":7}})", "not a file name");
    refused(R"({"metadata":{}})", "weight_map");
    refused("{", "not valid JSON");
    // without an index, a tensor in two files is ambiguous
    temp_dir dir;
    write_safetensors(dir / "a.safetensors", {{"x", at::randn({2})}});
    write_safetensors(dir / "b.safetensors", {{"x", at::randn({2})}});
    EXPECT_THROW(checkpoint{dir.path()}, bad_input);
}
