#include "fourfold/workloads/models/safetensors.hpp"

#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/files.hpp"
#include "fourfold/core/text.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace fourfold::workloads::models {
namespace {

namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this reader copies bytes as they are");

struct dtype_row {
    const char* name;
    std::int64_t bytes;
};
// The format's dtypes (safetensors 0.4); every one is checked for size, the floating ones and
// the signed integers read into libtorch tensors.
constexpr dtype_row k_dtypes[] = {{"BOOL", 1}, {"U8", 1},      {"I8", 1},     {"I16", 2},
                                  {"U16", 2},  {"I32", 4},     {"U32", 4},    {"I64", 8},
                                  {"U64", 8},  {"F16", 2},     {"BF16", 2},   {"F32", 4},
                                  {"F64", 8},  {"F8_E4M3", 1}, {"F8_E5M2", 1}};

std::string dtype_list() {
    std::vector<std::string> names;
    for (const auto& d : k_dtypes)
        names.emplace_back(d.name);
    return join(names, ", ");
}

// Reads exactly `n` bytes at `offset` or throws.
void pread_all(int fd, void* buffer, std::uint64_t n, std::uint64_t offset, const fs::path& path) {
    auto* p = static_cast<char*>(buffer);
    while (n > 0) {
        const auto chunk = static_cast<size_t>(std::min<std::uint64_t>(n, std::uint64_t{1} << 30));
        const auto got = ::pread(fd, p, chunk, static_cast<off_t>(offset));
        if (got < 0) {
            if (errno == EINTR)
                continue;
            throw bad_input(fmt::format("{}: read failed at byte {}: {}", path.string(), offset,
                                        std::strerror(errno)));
        }
        if (got == 0)
            throw bad_input(fmt::format("{}: the file ends at byte {} (truncated while reading?)",
                                        path.string(), offset));
        p += got;
        n -= static_cast<std::uint64_t>(got);
        offset += static_cast<std::uint64_t>(got);
    }
}

// The deepest bracket nesting of a JSON text, outside strings. Checked before parsing so that a
// hostile header cannot recurse the parser (or the destructor of its result) into the stack.
int json_depth(std::string_view text) {
    int depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (const char ch : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (ch == '\\')
                escaped = true;
            else if (ch == '"')
                in_string = false;
            continue;
        }
        if (ch == '"')
            in_string = true;
        else if (ch == '{' || ch == '[')
            deepest = std::max(deepest, ++depth);
        else if (ch == '}' || ch == ']')
            --depth;
    }
    return deepest;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::vector<std::string> parts;
    for (const auto d : shape)
        parts.push_back(std::to_string(d));
    return fmt::format("[{}]", join(parts, ", "));
}

safetensors_entry parse_entry(const std::string& name, const json& v, const std::string& where) {
    if (!v.is_object())
        throw bad_input(fmt::format("{}: tensor '{}' is not an object", where, name));
    safetensors_entry e;
    e.name = name;
    if (!v.contains("dtype") || !v["dtype"].is_string())
        throw bad_input(fmt::format("{}: tensor '{}' has no dtype string", where, name));
    e.dtype = v["dtype"].get<std::string>();
    const auto element = safetensors_dtype_bytes(e.dtype);
    if (element == 0)
        throw bad_input(fmt::format("{}: tensor '{}' has dtype '{}'; valid: {}", where, name,
                                    e.dtype, dtype_list()));
    if (!v.contains("shape") || !v["shape"].is_array())
        throw bad_input(fmt::format("{}: tensor '{}' has no shape list", where, name));
    if (v["shape"].size() > 16)
        throw bad_input(fmt::format("{}: tensor '{}' has {} dimensions; at most 16 are accepted",
                                    where, name, v["shape"].size()));
    unsigned __int128 numel = 1;
    for (const auto& d : v["shape"]) {
        if (!d.is_number_unsigned())
            throw bad_input(
                fmt::format("{}: tensor '{}' has shape entry {}, not a whole number >= 0", where,
                            name, d.dump()));
        const auto n = d.get<std::uint64_t>();
        if (n > (std::uint64_t{1} << 62))
            throw bad_input(
                fmt::format("{}: tensor '{}' has dimension {}, too large", where, name, n));
        numel *= n;
        if (numel > (static_cast<unsigned __int128>(1) << 62))
            throw bad_input(fmt::format("{}: tensor '{}' has a shape whose element count overflows",
                                        where, name));
        e.shape.push_back(static_cast<std::int64_t>(n));
    }
    const auto& off = v.contains("data_offsets") ? v["data_offsets"] : json();
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
        throw bad_input(fmt::format("{}: tensor '{}' needs data_offsets [begin, end] of whole "
                                    "numbers, got {}",
                                    where, name, off.dump()));
    e.begin = off[0].get<std::uint64_t>();
    e.end = off[1].get<std::uint64_t>();
    if (e.end < e.begin)
        throw bad_input(
            fmt::format("{}: tensor '{}' has data_offsets [{}, {}] that end before they "
                        "begin",
                        where, name, e.begin, e.end));
    const auto need = numel * static_cast<unsigned __int128>(element);
    if (static_cast<unsigned __int128>(e.end - e.begin) != need)
        throw bad_input(fmt::format("{}: tensor '{}' holds {} bytes but shape {} of {} needs {} "
                                    "({} bytes per element): wrong dtype size or shape",
                                    where, name, e.end - e.begin, shape_text(e.shape), e.dtype,
                                    static_cast<std::uint64_t>(need), element));
    return e;
}

} // namespace

std::int64_t safetensors_dtype_bytes(std::string_view dtype) {
    for (const auto& d : k_dtypes)
        if (dtype == d.name)
            return d.bytes;
    return 0;
}

std::optional<c10::ScalarType> scalar_type_of_safetensors(std::string_view dtype) {
    if (dtype == "BOOL")
        return at::kBool;
    if (dtype == "U8")
        return at::kByte;
    if (dtype == "I8")
        return at::kChar;
    if (dtype == "I16")
        return at::kShort;
    if (dtype == "I32")
        return at::kInt;
    if (dtype == "I64")
        return at::kLong;
    if (dtype == "F16")
        return at::kHalf;
    if (dtype == "BF16")
        return at::kBFloat16;
    if (dtype == "F32")
        return at::kFloat;
    if (dtype == "F64")
        return at::kDouble;
#if FOURFOLD_HAS_FLOAT8
    if (dtype == "F8_E4M3")
        return at::kFloat8_e4m3fn;
    if (dtype == "F8_E5M2")
        return at::kFloat8_e5m2;
#endif
    return std::nullopt;
}

std::optional<std::string> safetensors_dtype_of(c10::ScalarType type) {
    for (const auto& d : k_dtypes) {
        const auto t = scalar_type_of_safetensors(d.name);
        if (t && *t == type)
            return std::string(d.name);
    }
    return std::nullopt;
}

std::int64_t safetensors_entry::numel() const {
    std::int64_t n = 1;
    for (const auto d : shape)
        n *= d;
    return n;
}

safetensors_file::safetensors_file(fs::path path) : m_path(std::move(path)) {
    const auto where = m_path.string();
    m_fd = ::open(m_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (m_fd < 0)
        throw bad_input(fmt::format("{}: cannot open: {}", where, std::strerror(errno)));
    try {
        struct stat st {};
        if (::fstat(m_fd, &st) != 0 || !S_ISREG(st.st_mode))
            throw bad_input(fmt::format("{}: not a regular file", where));
        m_file_bytes = static_cast<std::uint64_t>(st.st_size);
        if (m_file_bytes < 8)
            throw bad_input(fmt::format("{}: {} bytes is too short for the 8-byte header length "
                                        "(truncated?)",
                                        where, m_file_bytes));
        unsigned char raw[8];
        pread_all(m_fd, raw, 8, 0, m_path);
        std::uint64_t header_bytes = 0;
        for (int i = 7; i >= 0; --i)
            header_bytes = (header_bytes << 8) | raw[i];
        if (header_bytes > m_file_bytes - 8)
            throw bad_input(fmt::format("{}: header length {} runs past the end of the file ({} "
                                        "bytes; truncated or not safetensors?)",
                                        where, header_bytes, m_file_bytes));
        if (header_bytes > k_max_header_bytes)
            throw bad_input(fmt::format("{}: header length {} is above the {} bytes accepted",
                                        where, header_bytes, k_max_header_bytes));
        if (header_bytes < 2)
            throw bad_input(
                fmt::format("{}: header length {} cannot hold a JSON object", where, header_bytes));
        std::string text(static_cast<std::size_t>(header_bytes), '\0');
        pread_all(m_fd, text.data(), header_bytes, 8, m_path);
        m_data_start = 8 + header_bytes;
        if (json_depth(text) > k_max_json_depth)
            throw bad_input(fmt::format("{}: header JSON nests deeper than {} levels", where,
                                        k_max_json_depth));

        std::set<std::string> seen;
        std::string duplicate;
        const json::parser_callback_t unique_keys = [&](int depth, json::parse_event_t event,
                                                        json& parsed) {
            if (depth == 1 && event == json::parse_event_t::key && parsed.is_string() &&
                !seen.insert(parsed.get<std::string>()).second && duplicate.empty())
                duplicate = parsed.get<std::string>();
            return true;
        };
        json header;
        try {
            header = json::parse(text, unique_keys);
        } catch (const json::exception& e) {
            throw bad_input(fmt::format("{}: header is not valid JSON ({})", where, e.what()));
        }
        if (!duplicate.empty())
            throw bad_input(
                fmt::format("{}: tensor '{}' is named twice in the header", where, duplicate));
        if (!header.is_object())
            throw bad_input(fmt::format("{}: header is not a JSON object", where));

        const std::uint64_t data_bytes = m_file_bytes - m_data_start;
        for (auto it = header.begin(); it != header.end(); ++it) {
            if (it.key() == "__metadata__") {
                if (!it.value().is_object())
                    throw bad_input(fmt::format("{}: __metadata__ is not an object", where));
                m_metadata = it.value();
                continue;
            }
            auto e = parse_entry(it.key(), it.value(), where);
            if (e.end > data_bytes)
                throw bad_input(
                    fmt::format("{}: tensor '{}' has data_offsets [{}, {}] past the end "
                                "of the data ({} bytes; truncated file?)",
                                where, e.name, e.begin, e.end, data_bytes));
            m_entries.push_back(std::move(e));
        }
        // The data must be covered exactly, in order, with no overlap and no hole.
        std::vector<const safetensors_entry*> order;
        for (const auto& e : m_entries)
            order.push_back(&e);
        std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
            return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
        });
        std::uint64_t cursor = 0;
        const safetensors_entry* previous = nullptr;
        for (const auto* e : order) {
            if (e->begin < cursor)
                throw bad_input(fmt::format("{}: tensors '{}' [{}, {}) and '{}' [{}, {}) overlap",
                                            where, previous->name, previous->begin, previous->end,
                                            e->name, e->begin, e->end));
            if (e->begin > cursor)
                throw bad_input(fmt::format("{}: data bytes [{}, {}) belong to no tensor (a hole "
                                            "before '{}')",
                                            where, cursor, e->begin, e->name));
            cursor = e->end;
            previous = e;
        }
        if (cursor != data_bytes)
            throw bad_input(fmt::format("{}: the data section holds {} bytes but the tensors cover "
                                        "{}",
                                        where, data_bytes, cursor));
        for (std::size_t i = 0; i < m_entries.size(); ++i)
            m_index[m_entries[i].name] = i;
    } catch (...) {
        ::close(m_fd);
        m_fd = -1;
        throw;
    }
}

safetensors_file::~safetensors_file() {
    if (m_fd >= 0)
        ::close(m_fd);
}

const safetensors_entry* safetensors_file::find(const std::string& name) const {
    const auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_entries[it->second];
}

at::Tensor safetensors_file::read(const safetensors_entry& e) const {
    const auto type = scalar_type_of_safetensors(e.dtype);
    if (!type)
        throw bad_input(fmt::format(
            "{}: tensor '{}' has dtype {}, which libtorch {}.{} cannot hold", m_path.string(),
            e.name, e.dtype, TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
    auto out = at::empty(e.shape, at::TensorOptions().dtype(*type));
    const auto bytes = e.end - e.begin;
    if (static_cast<std::uint64_t>(out.numel()) * out.element_size() != bytes)
        throw std::logic_error("safetensors: entry size changed after validation");
    if (bytes > 0)
        pread_all(m_fd, out.data_ptr(), bytes, m_data_start + e.begin, m_path);
    return out;
}

checkpoint::checkpoint(const fs::path& dir) : m_dir(dir) {
    const auto index_path = dir / "model.safetensors.index.json";
    std::vector<std::string> file_names;
    json weight_map;
    if (path_exists(index_path.string())) {
        m_indexed = true;
        std::ifstream in(index_path, std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        if (!in && !in.eof())
            throw bad_input(fmt::format("{}: cannot be read", index_path.string()));
        if (json_depth(text) > safetensors_file::k_max_json_depth)
            throw bad_input(fmt::format("{}: JSON nests too deep", index_path.string()));
        json index;
        try {
            index = json::parse(text);
        } catch (const json::exception& e) {
            throw bad_input(fmt::format("{}: not valid JSON ({})", index_path.string(), e.what()));
        }
        if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
            throw bad_input(fmt::format("{}: needs a \"weight_map\" object of tensor name -> file",
                                        index_path.string()));
        weight_map = index["weight_map"];
        std::set<std::string> unique;
        for (auto it = weight_map.begin(); it != weight_map.end(); ++it) {
            if (!it.value().is_string())
                throw bad_input(fmt::format("{}: weight_map[\"{}\"] is not a file name",
                                            index_path.string(), it.key()));
            const auto file = it.value().get<std::string>();
            // A shard must be a plain file in this directory: no path may lead outside it.
            if (file.empty() || file == "." || file == ".." ||
                file.find_first_of("/\\") != std::string::npos ||
                file.find('\0') != std::string::npos)
                throw bad_input(
                    fmt::format("{}: weight_map[\"{}\"] = '{}' is not a plain file name "
                                "in the directory",
                                index_path.string(), it.key(), file));
            if (unique.insert(file).second)
                file_names.push_back(file);
        }
    } else {
        for (const auto& name : list_directory(dir.string()))
            if (fs::path(name).extension() == ".safetensors")
                file_names.push_back(name);
        std::sort(file_names.begin(), file_names.end());
        if (file_names.empty())
            throw bad_input(fmt::format("{}: no *.safetensors files and no "
                                        "model.safetensors.index.json",
                                        dir.string()));
    }
    std::map<std::string, std::size_t> file_slot;
    for (const auto& name : file_names) {
        const auto path = dir / name;
        if (!is_regular_file(path.string()))
            throw bad_input(fmt::format("{}: shard {} is missing", dir.string(), name));
        file_slot[name] = m_files.size();
        m_files.push_back(std::make_unique<safetensors_file>(path));
    }
    if (m_indexed) {
        for (auto it = weight_map.begin(); it != weight_map.end(); ++it) {
            const auto slot = file_slot.at(it.value().get<std::string>());
            const auto* e = m_files[slot]->find(it.key());
            if (!e)
                throw bad_input(
                    fmt::format("{}: the index maps '{}' to {}, which has no such tensor",
                                dir.string(), it.key(), it.value().get<std::string>()));
            m_where[it.key()] = {slot, e};
        }
    } else {
        for (std::size_t slot = 0; slot < m_files.size(); ++slot)
            for (const auto& e : m_files[slot]->entries()) {
                const auto [it, fresh] = m_where.emplace(e.name, std::make_pair(slot, &e));
                if (!fresh)
                    throw bad_input(
                        fmt::format("{}: tensor '{}' is in both {} and {}", dir.string(), e.name,
                                    m_files[it->second.first]->path().filename().string(),
                                    m_files[slot]->path().filename().string()));
            }
    }
}

const safetensors_entry& checkpoint::entry(const std::string& name) const {
    const auto it = m_where.find(name);
    if (it == m_where.end())
        throw bad_input(fmt::format("{}: the checkpoint has no tensor '{}'", m_dir.string(), name));
    return *it->second.second;
}

at::Tensor checkpoint::read(const std::string& name) const {
    const auto& e = entry(name);
    return m_files[m_where.at(name).first]->read(e);
}

std::vector<std::string> checkpoint::names() const {
    std::vector<std::string> out;
    for (const auto& [name, where] : m_where)
        out.push_back(name);
    return out;
}

void write_safetensors(const fs::path& path, const named_tensors& tensors, const json& metadata) {
    json header = json::object();
    std::uint64_t offset = 0;
    std::vector<at::Tensor> data;
    for (const auto& [name, t] : tensors) {
        const auto dtype = safetensors_dtype_of(t.scalar_type());
        if (!dtype)
            throw bad_input(
                fmt::format("tensor '{}' has a dtype the safetensors format has no name "
                            "for",
                            name));
        auto c = t.detach().to(at::kCPU).contiguous();
        const auto bytes = static_cast<std::uint64_t>(c.numel()) * c.element_size();
        header[name] = json{{"dtype", *dtype},
                            {"shape", c.sizes().vec()},
                            {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
        data.push_back(std::move(c));
    }
    if (!metadata.empty())
        header["__metadata__"] = metadata;
    auto text = header.dump();
    text.append((8 - text.size() % 8) % 8,
                ' '); // aligns the data to 8 bytes, as the reference writer does
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        throw bad_input(fmt::format("{}: cannot be written", path.string()));
    unsigned char length[8];
    std::uint64_t n = text.size();
    for (auto& b : length) {
        b = static_cast<unsigned char>(n & 0xff);
        n >>= 8;
    }
    out.write(reinterpret_cast<const char*>(length), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& c : data)
        out.write(static_cast<const char*>(c.data_ptr()),
                  static_cast<std::streamsize>(c.numel() * c.element_size()));
    if (!out)
        throw bad_input(fmt::format("{}: write failed", path.string()));
}

void write_sharded_checkpoint(const fs::path& dir, const named_tensors& tensors,
                              std::int64_t shard_bytes) {
    std::vector<named_tensors> shards(1);
    std::int64_t in_shard = 0;
    for (const auto& nt : tensors) {
        const auto bytes = nt.second.numel() * static_cast<std::int64_t>(nt.second.element_size());
        if (in_shard > 0 && in_shard + bytes > shard_bytes) {
            shards.emplace_back();
            in_shard = 0;
        }
        shards.back().push_back(nt);
        in_shard += bytes;
    }
    json weight_map = json::object();
    std::int64_t total = 0;
    for (std::size_t i = 0; i < shards.size(); ++i) {
        const auto name = fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards.size());
        write_safetensors(dir / name, shards[i], json{{"format", "pt"}});
        for (const auto& [tensor, t] : shards[i]) {
            weight_map[tensor] = name;
            total += t.numel() * static_cast<std::int64_t>(t.element_size());
        }
    }
    std::ofstream index(dir / "model.safetensors.index.json", std::ios::trunc);
    index << json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}.dump(2);
}

} // namespace fourfold::workloads::models
