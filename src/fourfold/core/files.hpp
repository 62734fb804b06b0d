#pragma once
// File-system queries through POSIX. fourfold does not call std::filesystem operations: the
// PyTorch 2.11 wheel's libtorch.so exports its own copies of libstdc++'s std::filesystem
// symbols, and a binary that links it may bind to those (std::filesystem::remove_all crashed
// that way on the GPU machine).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold {

// What makes two paths one file: its device and inode (spellings, symbolic and hard links agree).
struct file_identity {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    bool operator==(const file_identity&) const = default;
};
std::optional<file_identity> identity_of(const std::string& path);

bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
bool is_regular_file(const std::string& path);
// Size in bytes; -1 when the path does not exist.
std::int64_t file_size(const std::string& path);
// The names in a directory (no "." or ".."), unsorted; empty when it cannot be read.
std::vector<std::string> list_directory(const std::string& path);
bool make_directory(const std::string& path, unsigned mode = 0755);
// Removes a file or a directory tree; false when something could not be removed.
bool remove_tree(const std::string& path);
// "dir/name" -> "dir" ("." for a bare name, "/" at the root) and "name".
std::string directory_of(const std::string& path);
std::string base_name(const std::string& path);
// The absolute path with the directory's symbolic links resolved and the last component as
// given (it need not exist); empty when the directory does not exist.
std::string resolved_location(const std::string& path);
// Whether this process may write the file (access(2) W_OK; true for root whatever the mode).
bool is_writable(const std::string& path);

// Writes `bytes` to a temporary file beside `path`, flushes it to the disk and renames it over
// `path`: afterwards `path` holds all of `bytes` or is as it was, never a part. Throws bad_input
// when the temporary cannot be created there (no such directory, no permission, `path` is a
// directory) and write_error with the errno text when writing, flushing or renaming fails (a
// full disk); the temporary is removed either way.
void write_file_atomically(const std::string& path, std::string_view bytes);

} // namespace fourfold
