// Owner-only folders and files: lstat/fstat checks, mkdir 0700, open 0600 with O_NOFOLLOW.
#include "base/owner_only.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/utf8.hpp"

namespace glassbox::base {
namespace {

// A path as error text: valid UTF-8 whatever bytes it holds (others shown as \xNN).
std::string shown(const std::filesystem::path& path) {
    std::string_view rest = path.native();
    std::string out;
    while (!rest.empty()) {
        const auto bad = find_invalid_utf8(rest);
        out.append(rest.substr(0, bad.value_or(rest.size())));
        if (!bad) break;
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned char>(rest[*bad]));
        out += hex;
        rest.remove_prefix(*bad + 1);
    }
    return out;
}

Error refused(const std::filesystem::path& path, const std::string& why) {
    return make_error(ErrorType::kInvalidRequest, shown(path) + " " + why);
}

Error failed(const std::string& what, const std::filesystem::path& path) {
    return make_error(ErrorType::kInternal,
                      "cannot " + what + " " + shown(path) + ": " + std::strerror(errno));
}

// Owned by this user and writable by no one else.
Result<void> check_owner_only(const std::filesystem::path& path, const struct stat& st,
                              const char* kind) {
    if (st.st_uid != ::geteuid())
        return refused(path, std::string("is a ") + kind + " owned by another user (uid " +
                                 std::to_string(st.st_uid) +
                                 "); glassbox keeps its files only where the user running it "
                                 "owns the folder");
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return refused(path, std::string("is a ") + kind + " other users can write (mode " + mode +
                                 "); glassbox refuses it rather than change its mode: use a "
                                 "folder only you can write (e.g. ~/.glassbox)");
    }
    return {};
}

// mkdir 0700; EEXIST is not an error (the caller checks what exists).
Result<void> make_folder(const std::filesystem::path& folder) {
    if (::mkdir(folder.c_str(), 0700) == 0 || errno == EEXIST) return {};
    return failed("create the folder", folder);
}

}  // namespace

Result<void> ensure_home_folder(const std::filesystem::path& folder) {
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0) {
        if (errno != ENOENT) return failed("inspect", folder);
        const auto parent = folder.parent_path();
        if (!parent.empty() && parent != folder) {
            struct stat parent_st {};
            if (::stat(parent.c_str(), &parent_st) != 0) {
                if (errno != ENOENT) return failed("inspect", parent);
                if (auto made = ensure_home_folder(parent); !made) return made;
            }
        }
        if (auto made = make_folder(folder); !made) return made;
        if (::stat(folder.c_str(), &st) != 0) return failed("inspect", folder);
    }
    if (!S_ISDIR(st.st_mode)) return refused(folder, "is not a folder");
    return check_owner_only(folder, st, "folder");
}

Result<void> ensure_owner_only_folder(const std::filesystem::path& folder) {
    if (auto made = make_folder(folder); !made) return made;
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0) return failed("inspect", folder);
    if (S_ISLNK(st.st_mode))
        return refused(folder,
                       "is a symbolic link; glassbox does not follow links inside its "
                       "home (replace it with a folder)");
    if (!S_ISDIR(st.st_mode)) return refused(folder, "is not a folder");
    return check_owner_only(folder, st, "folder");
}

Result<int> open_owner_only_file(const std::filesystem::path& path, OpenFor how) {
    const int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
                      (how == OpenFor::kAppend ? O_APPEND : 0);
    // Not O_TRUNC at open: a file that is not ours must stay untouched.
    const int fd = ::open(path.c_str(), flags, 0600);
    if (fd < 0) {
        if (errno == ELOOP)
            return refused(path,
                           "is a symbolic link; glassbox does not write through links "
                           "(remove it)");
        return failed("open", path);
    }
    const auto close_with = [fd](Error error) {
        ::close(fd);
        return error;
    };
    struct stat st {};
    if (::fstat(fd, &st) != 0) return close_with(failed("inspect", path));
    if (!S_ISREG(st.st_mode)) return close_with(refused(path, "is not a regular file"));
    if (st.st_uid != ::geteuid())
        return close_with(refused(
            path, "is a file owned by another user (uid " + std::to_string(st.st_uid) + ")"));
    if (st.st_nlink != 1)
        return close_with(refused(path,
                                  "has other hard links; glassbox writes only files of "
                                  "its own (remove it)"));
    if ((st.st_mode & 07777) != 0600 && ::fchmod(fd, 0600) != 0)
        return close_with(failed("make owner-only", path));
    if (how == OpenFor::kTruncate && ::ftruncate(fd, 0) != 0)
        return close_with(failed("truncate", path));
    // O_NONBLOCK only kept a FIFO from blocking the open; writes to a file block as usual.
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

Result<void> write_owner_only_file(const std::filesystem::path& path, std::string_view text) {
    static std::atomic<unsigned> counter{0};
    std::filesystem::path temp = path;
    temp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return failed("create", temp);
    const auto give_up = [&](Error error) {
        ::close(fd);
        ::unlink(temp.c_str());
        return error;
    };
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return give_up(failed("write", temp));
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    if (::fsync(fd) != 0) return give_up(failed("write", temp));
    if (::close(fd) != 0) {
        ::unlink(temp.c_str());
        return failed("write", temp);
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        const Error error = failed("replace", path);
        ::unlink(temp.c_str());
        return error;
    }
    return {};
}

Result<std::string> read_owner_only_secret(const std::filesystem::path& path,
                                           std::size_t max_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP) return refused(path, "is a symbolic link; give the secret's own file");
        return make_error(errno == ENOENT ? ErrorType::kNotFound : ErrorType::kInvalidRequest,
                          "cannot open " + shown(path) + ": " + std::strerror(errno));
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return failed("stat", path);
    if (!S_ISREG(st.st_mode)) return refused(path, "is not a regular file");
    if (st.st_uid != ::geteuid())
        return refused(path, "is owned by another user (uid " + std::to_string(st.st_uid) + ")");
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return refused(path, std::string("holds secrets but other users may use it (mode ") + mode +
                                 "); chmod 600 it");
    }
    if (static_cast<std::size_t>(st.st_size) > max_bytes)
        return refused(path, "is larger than " + std::to_string(max_bytes) + " bytes");
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        const auto n = ::read(fd, text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return failed("read", path);
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    text.resize(got);
    return text;
}

}  // namespace glassbox::base
