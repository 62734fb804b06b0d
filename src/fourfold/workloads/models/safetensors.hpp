#pragma once
// Our own reader (and writer) of the safetensors format: an 8-byte little-endian header length
// N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"},
// then the data. Every length, offset, size and name is checked against the file before a byte
// of data is read, so a malformed, truncated or hostile file is a bad_input that names the file
// and the problem, never a crash or an out-of-bounds read. The header's checks are
// safetensors_header.hpp's, which need no libtorch.
#include "fourfold/core/json.hpp"
#include "fourfold/workloads/models/safetensors_header.hpp"

#include <ATen/Tensor.h>
#include <c10/core/ScalarType.h>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fourfold::workloads::models {

// The libtorch type of a safetensors dtype, where this build has one.
std::optional<c10::ScalarType> scalar_type_of_safetensors(std::string_view dtype);
std::optional<std::string> safetensors_dtype_of(c10::ScalarType type);

class safetensors_file {
  public:
    // Headers larger than this are refused (the reference implementation's limit).
    static constexpr std::uint64_t k_max_header_bytes = k_safetensors_max_header_bytes;
    // JSON nesting deeper than this is refused before parsing (a valid header nests 3 deep).
    static constexpr int k_max_json_depth = k_safetensors_max_json_depth;

    // Opens and validates the whole header; throws bad_input naming the file and the problem.
    explicit safetensors_file(std::filesystem::path path);
    ~safetensors_file();
    safetensors_file(const safetensors_file&) = delete;
    safetensors_file& operator=(const safetensors_file&) = delete;

    const std::filesystem::path& path() const { return m_path; }
    const std::vector<safetensors_entry>& entries() const { return m_entries; }
    const safetensors_entry* find(const std::string& name) const;
    const json& metadata() const { return m_metadata; }
    std::uint64_t file_bytes() const { return m_file_bytes; }

    // A CPU tensor that owns a copy of the tensor's bytes.
    at::Tensor read(const safetensors_entry& entry) const;

  private:
    std::filesystem::path m_path;
    int m_fd = -1;
    std::uint64_t m_file_bytes = 0;
    std::uint64_t m_data_start = 0;
    std::vector<safetensors_entry> m_entries;
    std::map<std::string, std::size_t> m_index;
    json m_metadata = json::object();
};

// A directory of safetensors weights: model.safetensors.index.json and its shards (Hugging
// Face's sharded layout), or else every *.safetensors file in it.
class checkpoint {
  public:
    explicit checkpoint(const std::filesystem::path& dir);

    bool contains(const std::string& name) const { return m_where.count(name) > 0; }
    // Throws bad_input when the checkpoint has no such tensor.
    const safetensors_entry& entry(const std::string& name) const;
    at::Tensor read(const std::string& name) const;
    std::vector<std::string> names() const;
    std::size_t file_count() const { return m_files.size(); }
    bool indexed() const { return m_indexed; }
    const std::filesystem::path& directory() const { return m_dir; }

  private:
    std::filesystem::path m_dir;
    bool m_indexed = false;
    std::vector<std::unique_ptr<safetensors_file>> m_files;
    std::map<std::string, std::pair<std::size_t, const safetensors_entry*>> m_where;
};

using named_tensors = std::vector<std::pair<std::string, at::Tensor>>;

// Writes tensors (made contiguous, copied to the CPU) in the safetensors format. `metadata`
// must be an object of strings.
void write_safetensors(const std::filesystem::path& path, const named_tensors& tensors,
                       const json& metadata = json::object());

// Writes `tensors` as Hugging Face does a sharded checkpoint: shards of at most
// `shard_bytes` named model-0000i-of-0000n.safetensors plus model.safetensors.index.json.
void write_sharded_checkpoint(const std::filesystem::path& dir, const named_tensors& tensors,
                              std::int64_t shard_bytes);

} // namespace fourfold::workloads::models
