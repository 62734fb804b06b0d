#include "fourfold/core/files.hpp"

#include "fourfold/core/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fourfold {
namespace {

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
    return std::remove(path);
}

} // namespace

bool path_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_regular_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::int64_t file_size(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_size) : -1;
}

std::vector<std::string> list_directory(const std::string& path) {
    std::vector<std::string> out;
    DIR* d = ::opendir(path.c_str());
    if (!d)
        return out;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..")
            out.push_back(name);
    }
    ::closedir(d);
    return out;
}

bool make_directory(const std::string& path, unsigned mode) {
    return ::mkdir(path.c_str(), static_cast<mode_t>(mode)) == 0;
}

bool remove_tree(const std::string& path) {
    if (!path_exists(path))
        return true;
    return ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0;
}

std::optional<file_identity> identity_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return std::nullopt;
    return file_identity{static_cast<std::uint64_t>(st.st_dev),
                         static_cast<std::uint64_t>(st.st_ino)};
}

std::string directory_of(const std::string& path) {
    const auto slash = path.find_last_of('/');
    if (slash == std::string::npos)
        return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_name(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string resolved_location(const std::string& path) {
    char* dir = ::realpath(directory_of(path).c_str(), nullptr);
    if (!dir)
        return {};
    std::string out = dir;
    std::free(dir);
    return (out == "/" ? out : out + "/") + base_name(path);
}

bool is_writable(const std::string& path) {
    return ::access(path.c_str(), W_OK) == 0;
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
    if (is_directory(path))
        throw bad_input(
            fmt::format("cannot write '{}': it is a directory; give a file path", path));
    std::string temp = directory_of(path) + "/." + base_name(path) + ".fourfold-XXXXXX";
    const int fd = ::mkstemp(temp.data());
    if (fd < 0)
        throw bad_input(fmt::format("cannot write '{}': {}; give a path in a writable directory",
                                    path, std::strerror(errno)));
    bool open = true;
    auto fail = [&](const char* step) {
        const int error = errno;
        if (open)
            ::close(fd);
        ::unlink(temp.c_str());
        throw write_error(fmt::format("writing '{}' failed ({}): {}; nothing was written", path,
                                      step, std::strerror(error)));
    };
    // the mode a new file would get from open(2), or the mode of the file it replaces
    struct stat st {};
    mode_t mode = 0;
    if (::stat(path.c_str(), &st) == 0) {
        mode = st.st_mode & 07777;
    } else {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        mode = 0666 & ~mask;
    }
    if (::fchmod(fd, mode) != 0)
        fail("fchmod");
    std::size_t done = 0;
    while (done < bytes.size()) {
        const auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            fail("write");
        }
        done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0)
        fail("fsync");
    open = false;
    if (::close(fd) != 0)
        fail("close");
    if (::rename(temp.c_str(), path.c_str()) != 0)
        fail("rename");
    // the rename itself reaches the disk with the directory
    const int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
}

} // namespace fourfold
