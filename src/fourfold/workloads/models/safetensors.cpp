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

} // namespace

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
    for (const auto& name : safetensors_dtype_names()) {
        const auto t = scalar_type_of_safetensors(name);
        if (t && *t == type)
            return name;
    }
    return std::nullopt;
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
        unsigned char raw[8] = {};
        if (m_file_bytes >= 8)
            pread_all(m_fd, raw, 8, 0, m_path);
        const auto header_bytes = safetensors_header_length(raw, m_file_bytes, where);
        std::string text(static_cast<std::size_t>(header_bytes), '\0');
        pread_all(m_fd, text.data(), header_bytes, 8, m_path);
        m_data_start = 8 + header_bytes;
        auto header = parse_safetensors_header(text, m_file_bytes - m_data_start, where);
        m_entries = std::move(header.entries);
        m_metadata = std::move(header.metadata);
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
        if (json_nesting_depth(text) > k_safetensors_max_json_depth)
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
