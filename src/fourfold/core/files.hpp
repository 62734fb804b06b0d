#pragma once
// File-system queries through POSIX. fourfold does not call std::filesystem operations: the
// PyTorch 2.11 wheel's libtorch.so exports its own copies of libstdc++'s std::filesystem
// symbols, and a binary that links it may bind to those (std::filesystem::remove_all crashed
// that way on the GPU machine).
#include <string>
#include <vector>

namespace fourfold {

bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
bool is_regular_file(const std::string& path);
// The names in a directory (no "." or ".."), unsorted; empty when it cannot be read.
std::vector<std::string> list_directory(const std::string& path);
bool make_directory(const std::string& path, unsigned mode = 0755);
// Removes a file or a directory tree; false when something could not be removed.
bool remove_tree(const std::string& path);

} // namespace fourfold
