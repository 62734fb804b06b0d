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
    write_sharded_checkpoint(dir.path(), tensors, std::int64_t{3} * 32 * 8 * 4);
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

// safetensors_header.hpp: the same checks without a file or libtorch (what the file reader
// calls, and what fuzz_safetensors_header feeds arbitrary bytes).
TEST(safetensors, the_header_parses_from_bytes_as_the_file_reader_reads_it) {
    temp_dir dir;
    const auto good = dir / "good.safetensors";
    write_safetensors(good, {{"a", at::randn({8, 3})}, {"b", at::randn({5}).to(at::kBFloat16)}},
                      json{{"format", "pt"}});
    const auto bytes = fourfold::testing::read_file(good);
    const safetensors_file f(good);
    const auto h = parse_safetensors_bytes(bytes, "in memory");
    ASSERT_EQ(h.entries.size(), f.entries().size());
    for (std::size_t i = 0; i < h.entries.size(); ++i) {
        EXPECT_EQ(h.entries[i].name, f.entries()[i].name);
        EXPECT_EQ(h.entries[i].dtype, f.entries()[i].dtype);
        EXPECT_EQ(h.entries[i].shape, f.entries()[i].shape);
        EXPECT_EQ(h.entries[i].begin, f.entries()[i].begin);
        EXPECT_EQ(h.entries[i].end, f.entries()[i].end);
    }
    EXPECT_EQ(h.metadata, f.metadata());
    EXPECT_EQ(h.entries[0].name, "a");
    EXPECT_EQ(h.entries[0].dtype, "F32");
    EXPECT_EQ(h.entries[0].shape, (std::vector<std::int64_t>{8, 3}));
    EXPECT_EQ(h.entries[0].numel(), 24);
    EXPECT_EQ(h.entries[1].dtype, "BF16");
    EXPECT_EQ(h.entries[1].end - h.entries[1].begin, 10u);
}

TEST(safetensors, header_refusals_name_the_source_and_the_problem_without_a_file) {
    auto refused = [](const std::string& bytes, const std::string& needle) {
        try {
            (void)parse_safetensors_bytes(bytes, "source.st");
            ADD_FAILURE() << "accepted: " << bytes;
        } catch (const bad_input& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find("source.st"), std::string::npos) << msg;
            EXPECT_NE(msg.find(needle), std::string::npos) << "'" << needle << "' not in " << msg;
        }
    };
    refused("", "too short");
    refused("1234567", "too short");
    refused(raw_file("{}", "", 1000), "past the end");
    refused(raw_file("{}", "", ~std::uint64_t{0}), "past the end");
    refused(raw_file("{}", "", 1), "cannot hold");
    refused(raw_file("[1]", ""), "not a JSON object");
    refused(raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234"),
            "past the end of the data");
    refused(raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "12345678"),
            "cover 4");
    refused(raw_file(std::string(100, '{'), ""), "nests deeper than 64");
    // a header of 17 dimensions, one more than accepted
    std::string shape = "[1";
    for (int i = 0; i < 16; ++i)
        shape += ",1";
    refused(raw_file(R"({"w":{"dtype":"U8","shape":)" + shape + R"(],"data_offsets":[0,1]}})", "x"),
            "at most 16");
    // the header's length checks alone
    const unsigned char huge[8] = {0, 0, 0, 0, 0, 0, 0, 0x80};
    EXPECT_THROW((void)safetensors_header_length(huge, 16, "f"), bad_input);
    const unsigned char two[8] = {2, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(safetensors_header_length(two, 10, "f"), 2u);
    EXPECT_THROW((void)safetensors_header_length(two, 9, "f"), bad_input);
    // above the 100 MiB limit in a file large enough to hold it
    const auto over = k_safetensors_max_header_bytes + 1;
    unsigned char big[8];
    for (int i = 0; i < 8; ++i)
        big[i] = static_cast<unsigned char>((over >> (8 * i)) & 0xff);
    try {
        (void)safetensors_header_length(big, over + 8, "f");
        ADD_FAILURE() << "a header above the limit was accepted";
    } catch (const bad_input& e) {
        EXPECT_NE(std::string(e.what()).find("above the"), std::string::npos) << e.what();
    }
}

TEST(safetensors, a_header_text_is_validated_against_its_data_section) {
    const std::string two =
        R"({"b":{"dtype":"I64","shape":[1],"data_offsets":[4,12]},)"
        R"("a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"__metadata__":{"k":"v"}})";
    const auto h = parse_safetensors_header(two, 12, "t");
    ASSERT_EQ(h.entries.size(), 2u);
    EXPECT_EQ(h.metadata, (json{{"k", "v"}}));
    EXPECT_THROW((void)parse_safetensors_header(two, 13, "t"), bad_input); // a byte left over
    EXPECT_THROW((void)parse_safetensors_header(two, 11, "t"), bad_input); // past the end
    // an empty header holds no tensors and covers an empty data section only
    EXPECT_TRUE(parse_safetensors_header("{}", 0, "t").entries.empty());
    EXPECT_THROW((void)parse_safetensors_header("{}", 1, "t"), bad_input);
    // a zero-size tensor covers nothing
    EXPECT_EQ(parse_safetensors_header(
                  R"({"z":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}})", 0, "t")
                  .entries.front()
                  .numel(),
              0);
}

TEST(safetensors, dtype_table_and_json_nesting) {
    EXPECT_EQ(safetensors_dtype_bytes("BF16"), 2);
    EXPECT_EQ(safetensors_dtype_bytes("F8_E5M2"), 1);
    EXPECT_EQ(safetensors_dtype_bytes("U64"), 8);
    EXPECT_EQ(safetensors_dtype_bytes("bf16"), 0); // names are case-sensitive, as the format's
    EXPECT_EQ(safetensors_dtype_names().size(), 15u);
    EXPECT_EQ(safetensors_dtype_list().substr(0, 12), "BOOL, U8, I8");
    EXPECT_EQ(json_nesting_depth("{}"), 1);
    EXPECT_EQ(json_nesting_depth(R"({"a":[{"b":1}]})"), 3);
    EXPECT_EQ(json_nesting_depth(R"({"a":"[[[[\"[[["})"), 1); // brackets inside strings
    EXPECT_EQ(json_nesting_depth(""), 0);
}
