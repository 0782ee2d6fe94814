// A folder under $TMPDIR for the files of one test process, removed when the process exits:
// unit tests that make their files by name (a spool, a database) leave nothing behind.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace glassbox::test_support {

// `<tmp>/<prefix>-<pid>`, created on first use and removed (whole) at exit.
inline const std::filesystem::path& scratch_dir(const std::string& prefix) {
    struct Owned {
        std::filesystem::path path;
        explicit Owned(std::filesystem::path p) : path(std::move(p)) {
            std::filesystem::create_directories(path);
        }
        ~Owned() {
            std::error_code ignored;
            std::filesystem::remove_all(path, ignored);
        }
        Owned(const Owned&) = delete;
        Owned& operator=(const Owned&) = delete;
    };
    static const Owned owned(std::filesystem::temp_directory_path() /
                             (prefix + "-" + std::to_string(::getpid())));
    return owned.path;
}

}  // namespace glassbox::test_support
